/** Writes docs/validation.md from the table of validation bounds (run by `pnpm generate`). */
import { writeFileSync } from "node:fs";
import { validationBounds } from "../src/platform/validation-table.js";
import { renderValidationDoc } from "../src/validation/describe.js";

writeFileSync(new URL("../../../docs/validation.md", import.meta.url), renderValidationDoc(validationBounds));
