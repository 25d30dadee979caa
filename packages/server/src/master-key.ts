/**
 * The master key: from configuration, or, on the embedded default, from a key file that is
 * generated (mode 0600) on first start and reused after. Never logged.
 *
 * @module
 */
import { randomUUID } from "node:crypto";
import { chmod, link, mkdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { formatMasterKey, generateMasterKey, InvalidMasterKeyError, parseMasterKey } from "@wap/core";
import { ConfigError } from "./config.js";

export interface MasterKeySource {
  /** The key itself (base64), e.g. from WAP_MASTER_KEY. Wins over the file. */
  readonly masterKey?: string | undefined;
  /** The key file; generated if missing (unless `generate` is false). */
  readonly file: string;
  /**
   * Whether a missing key may be generated. Not with PostgreSQL: each instance would make its
   * own, and none could open what another sealed.
   */
  readonly generate?: boolean;
}

/** The key file the settings name: `WAP_MASTER_KEY_FILE`, or `master.key` in the data directory. */
export function masterKeyFileOf(config: { masterKeyFile: string | undefined; dataDir: string }): string {
  return resolve(config.masterKeyFile ?? join(config.dataDir, "master.key"));
}

/** Loads the master key, generating the key file when there is none. */
export async function loadMasterKey(
  source: MasterKeySource,
): Promise<{ masterKey: Uint8Array; generated: boolean }> {
  if (source.masterKey !== undefined)
    return { masterKey: parse(source.masterKey, "WAP_MASTER_KEY"), generated: false };
  const existing = await readKeyFile(source.file);
  if (existing !== undefined) return { masterKey: parse(existing, source.file), generated: false };
  if (source.generate === false) {
    throw new ConfigError(
      `no master key: every instance over one PostgreSQL database must use the same one. Set WAP_MASTER_KEY (or put it in ${source.file}, or point WAP_MASTER_KEY_FILE at it); print a new one with \`wap-server master-key\``,
    );
  }

  const masterKey = generateMasterKey();
  await mkdir(dirname(source.file), { recursive: true, mode: 0o700 });
  // Written aside and hard-linked into place: link() fails if another process won the race, and
  // the file never exists half-written.
  const temporary = join(dirname(source.file), `.master.key.${randomUUID()}`);
  await writeFile(temporary, `${formatMasterKey(masterKey)}\n`, { mode: 0o600, flag: "wx" });
  try {
    await link(temporary, source.file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    const winner = await readKeyFile(source.file);
    if (winner === undefined) throw error;
    return { masterKey: parse(winner, source.file), generated: false };
  } finally {
    await rm(temporary, { force: true });
  }
  return { masterKey, generated: true };
}

async function readKeyFile(file: string): Promise<string | undefined> {
  try {
    const info = await stat(file);
    // A key readable by others is a leak waiting to happen; tighten it rather than refuse to start.
    if ((info.mode & 0o077) !== 0) await chmod(file, 0o600);
    return await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new ConfigError(`cannot read the master key file ${file}: ${(error as Error).message}`);
  }
}

/** Reads a master key given as a setting (`source` names it in the error). */
export function parseMasterKeySetting(text: string, source: string): Uint8Array {
  return parse(text, source);
}

function parse(text: string, source: string): Uint8Array {
  try {
    return parseMasterKey(text);
  } catch (error) {
    if (error instanceof InvalidMasterKeyError) throw new ConfigError(`${source}: ${error.message}`);
    throw error;
  }
}
