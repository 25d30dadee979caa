/**
 * Installs what the test suite needs (the same step `pnpm test` runs before its first test), or with
 * `--check` only says what is missing and which packages would be installed. Exits 1 when something
 * is missing and could not be installed.
 *
 *   node --import tsx scripts/test-prerequisites.ts [--check]
 */
import { parseArgs } from "node:util";
import { PrerequisitesMissingError, preparePrerequisites } from "../packages/test-kit/src/prerequisites.js";

const { values } = parseArgs({ options: { check: { type: "boolean", default: false } } });
try {
  await preparePrerequisites({ checkOnly: values.check });
  console.log("Every program the tests need is installed.");
} catch (error) {
  if (!(error instanceof PrerequisitesMissingError)) throw error;
  process.exitCode = 1;
}
