import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { formatMasterKey, generateMasterKey } from "@wap/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadMasterKey } from "./master-key.js";

describe("loadMasterKey", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "wap-key-"));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("generates a 0600 key file on first start and reuses it after", async () => {
    const file = join(dir, "data", "master.key");
    const first = await loadMasterKey({ file });
    expect(first.generated).toBe(true);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const second = await loadMasterKey({ file });
    expect(second.generated).toBe(false);
    expect(Buffer.from(second.masterKey)).toEqual(Buffer.from(first.masterKey));
  });

  it("prefers the configured key and explains a bad one", async () => {
    const key = generateMasterKey();
    const loaded = await loadMasterKey({ masterKey: formatMasterKey(key), file: join(dir, "unused") });
    expect(Buffer.from(loaded.masterKey)).toEqual(Buffer.from(key));
    await expect(loadMasterKey({ masterKey: "short", file: join(dir, "unused") })).rejects.toThrow(
      /WAP_MASTER_KEY/,
    );
    const bad = join(dir, "bad.key");
    await writeFile(bad, "not a key\n");
    await expect(loadMasterKey({ file: bad })).rejects.toThrow(/bad\.key/);
  });

  it("tightens a key file readable by others", async () => {
    const file = join(dir, "loose.key");
    await writeFile(file, `${formatMasterKey(generateMasterKey())}\n`, { mode: 0o644 });
    await loadMasterKey({ file });
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await readFile(file, "utf8")).trim()).not.toBe("");
  });
});
