/** Writes docs/errors.md from the tables of error reasons (run by `pnpm generate`). */
import { writeFileSync } from "node:fs";
import { renderErrorsDoc } from "../src/error-reasons/describe.js";
import { errorReasons } from "../src/error-reasons/registry.js";

writeFileSync(new URL("../../../docs/errors.md", import.meta.url), renderErrorsDoc(errorReasons));
