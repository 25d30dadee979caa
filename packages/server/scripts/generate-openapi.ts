/**
 * Writes `packages/server/openapi.json` from the protos' descriptors (`pnpm generate`; CI checks
 * that the committed file is up to date with `pnpm check:generated`).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { platformServices } from "@wap/api";
import { publicProcedures } from "@wap/core/internal";
import { buildOpenApiDocument } from "../src/openapi/document.js";

const root = join(import.meta.dirname, "..");
const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };
const document = buildOpenApiDocument({
  services: platformServices,
  version,
  publicProcedures: publicProcedures(),
});
writeFileSync(join(root, "openapi.json"), `${JSON.stringify(document, null, 2)}\n`);
