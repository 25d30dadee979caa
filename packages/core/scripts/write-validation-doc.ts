/** Writes docs/validation.md from the table of validation bounds (run by `pnpm generate`). */
import { writeFileSync } from "node:fs";
import { renderValidationDoc } from "../src/validation/describe.js";
import { validationBounds } from "../src/validation/table.js";

writeFileSync(new URL("../../../docs/validation.md", import.meta.url), renderValidationDoc(validationBounds));
