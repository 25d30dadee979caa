/**
 * Replacing a file so that a reader (sshd, at any moment) sees either the old or the new
 * contents, never a half-written file, and a power cut keeps one of the two: write a temporary
 * file in the same folder, fsync it, rename it over the old one, fsync the folder.
 *
 * @module
 */
import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { open, readdir, readFile, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { UnreadableFileError } from "./errors.js";

/** The file's bytes; undefined only when it does not exist (any other failure throws). */
export async function readIfPresent(path: string): Promise<Buffer | undefined> {
  try {
    return await readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new UnreadableFileError(path, error);
  }
}

/** The folder's entries; empty only when it does not exist (any other failure throws). */
export async function listIfPresent(path: string): Promise<string[]> {
  try {
    return await readdir(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw new UnreadableFileError(path, error);
  }
}

/** Writes `contents` to `path` atomically with `mode`; false (and nothing written) when unchanged. */
export async function replaceFile(
  path: string,
  contents: string | Uint8Array,
  mode: number,
): Promise<boolean> {
  const bytes = typeof contents === "string" ? Buffer.from(contents) : Buffer.from(contents);
  const current = await readIfPresent(path);
  if (current?.equals(bytes)) return false;
  const temporary = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString("hex")}.tmp`);
  const file = await open(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, mode);
  try {
    await file.writeFile(bytes);
    // The mode given to open() is masked by the umask; the file must be exactly `mode`.
    await file.chmod(mode);
    await file.sync();
  } catch (error) {
    await file.close();
    await rm(temporary, { force: true });
    throw error;
  }
  await file.close();
  try {
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
  await syncDirectory(dirname(path));
  return true;
}

/** Removes `path` (and makes the removal durable); false when there was nothing to remove. */
export async function removeFile(path: string): Promise<boolean> {
  try {
    await rm(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
  await syncDirectory(dirname(path));
  return true;
}

async function syncDirectory(path: string): Promise<void> {
  const dir = await open(path, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}
