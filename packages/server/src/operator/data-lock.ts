/**
 * Which process serves an embedded database: `<database file>.pid` holds the server's process id
 * while it runs. `restore` and `rotate-master-key` refuse to touch a database a live server holds;
 * a file left by a process that died is taken over.
 *
 * @module
 */
import { readFile, rm, writeFile } from "node:fs/promises";

export interface DataLock {
  release(): Promise<void>;
}

export function lockFileOf(databaseFile: string): string {
  return `${databaseFile}.pid`;
}

/** The id of the live process holding the database, if another one does. */
export async function holderOf(databaseFile: string): Promise<number | undefined> {
  let text: string;
  try {
    text = await readFile(lockFileOf(databaseFile), "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  const pid = Number(text.trim());
  if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) return undefined;
  return isAlive(pid) ? pid : undefined;
}

/** Records this process as the database's server; throws when another live process is. */
export async function lockDatabase(databaseFile: string): Promise<DataLock> {
  const holder = await holderOf(databaseFile);
  if (holder !== undefined) {
    throw new Error(`another wap-server (process ${holder}) is serving ${databaseFile}`);
  }
  const file = lockFileOf(databaseFile);
  await writeFile(file, `${process.pid}\n`, { mode: 0o600 });
  return {
    async release() {
      const text = await readFile(file, "utf8").catch(() => "");
      if (Number(text.trim()) === process.pid) await rm(file, { force: true });
    },
  };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
