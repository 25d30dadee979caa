#!/usr/bin/env node
import { run } from "./program.js";

process.exitCode = await run(process.argv.slice(2));
// Open HTTP/2 sessions or a browser launcher must not keep a finished command waiting.
process.exit();
