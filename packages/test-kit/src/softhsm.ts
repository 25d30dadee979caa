/**
 * A throwaway SoftHSM2 token for tests: a private SOFTHSM2_CONF and token directory under the
 * system temp dir, one token initialised with `softhsm2-util --init-token --free`. When SoftHSM2
 * is not installed, `createSoftHsmToken` throws and says how to install it: tests fail, never skip.
 */
import { execFile } from "node:child_process";
import { access, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** Where Debian's softhsm2 package puts the library. */
const MODULE_CANDIDATES = [
  "/usr/lib/softhsm/libsofthsm2.so",
  "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so",
  "/usr/lib/aarch64-linux-gnu/softhsm/libsofthsm2.so",
  "/usr/local/lib/softhsm/libsofthsm2.so",
];

const INSTALL_HINT =
  "SoftHSM2 is needed for the PKCS#11 tests: `apt-get install -y --no-install-recommends softhsm2` (`pnpm test` installs it before the first test when run as root)";

export interface SoftHsmToken {
  readonly module: string;
  readonly tokenLabel: string;
  readonly pin: string;
  readonly dir: string;
  /** Initialises another token in the same SoftHSM directory (it has none of the first one's keys). */
  addToken(label: string): Promise<void>;
  remove(): Promise<void>;
}

async function findModule(): Promise<string> {
  for (const candidate of MODULE_CANDIDATES) {
    try {
      await access(candidate);
      return candidate;
    } catch {
      // Try the next place.
    }
  }
  throw new Error(`libsofthsm2.so not found (looked in ${MODULE_CANDIDATES.join(", ")}). ${INSTALL_HINT}`);
}

/**
 * Creates a SoftHSM2 directory with one token, and points this process's SOFTHSM2_CONF at it
 * (the library reads it when it is loaded).
 */
export async function createSoftHsmToken(tokenLabel = "wap-test"): Promise<SoftHsmToken> {
  const module = await findModule();
  const dir = await mkdtemp(join(tmpdir(), "wap-softhsm-"));
  const tokens = join(dir, "tokens");
  await mkdir(tokens);
  const conf = join(dir, "softhsm2.conf");
  await writeFile(conf, `directories.tokendir = ${tokens}\nobjectstore.backend = file\nlog.level = ERROR\n`);
  process.env.SOFTHSM2_CONF = conf;
  const pin = "1234";
  const env = { ...process.env, SOFTHSM2_CONF: conf };
  const addToken = async (label: string) => {
    try {
      await run(
        "softhsm2-util",
        ["--init-token", "--free", "--label", label, "--so-pin", "5678", "--pin", pin],
        { env },
      );
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      throw new Error(
        code === "ENOENT"
          ? `softhsm2-util not found. ${INSTALL_HINT}`
          : `softhsm2-util failed: ${String(error)}`,
      );
    }
  };
  await addToken(tokenLabel);
  return {
    module,
    tokenLabel,
    pin,
    dir,
    addToken,
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
