/** Writes the generated documents (docs/permissions.md, errors.md, validation.md): `pnpm docs:generate`. */
import { writeFileSync } from "node:fs";
import { generatedDocs } from "../src/platform/generated-docs.js";

for (const doc of generatedDocs)
  writeFileSync(new URL(`../../../${doc.path}`, import.meta.url), doc.render());
