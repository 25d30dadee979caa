/**
 * vitest's global set-up for `pnpm test`: before the first test, the machine gets the programs the
 * suite drives (see prerequisites.ts), or the run stops at once with the command that installs them.
 */
import { preparePrerequisites } from "./prerequisites.js";

// Every project inherits the root's global set-up, and each loads this module afresh; the work is
// done once per vitest process.
const ONCE = Symbol.for("wap.test-prerequisites");
type WithOnce = typeof globalThis & { [ONCE]?: Promise<void> };

export default function setup(): Promise<void> {
  const scope = globalThis as WithOnce;
  scope[ONCE] ??= preparePrerequisites();
  return scope[ONCE];
}
