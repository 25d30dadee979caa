/**
 * What `wap ssh` keeps of a destination: only for the device signed in, only for an hour, at most
 * a bounded number of destinations, and read back as untrusted (an entry whose strings lost their
 * form is never used). Real files in a real config folder.
 */
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliConfig, ConfigStore } from "../config.js";
import {
  type CachedLogin,
  cachedLogin,
  cachedLoginName,
  cacheKey,
  isFresh,
  isUsableEntry,
  loginCacheMaxAgeMs,
  loginCacheMaxEntries,
  saveLogin,
  withEntry,
} from "./login-cache.js";
import { endpointOf, isLoginName } from "./targets.js";

const config: CliConfig = {
  server: "https://wap.example.com",
  deviceId: "0193f1c2-7a0e-7d4b-9d55-0a3c2f9b1e00",
  user: {
    id: "0193f1c2-7a0e-7d4b-9d55-0a3c2f9b1e01",
    username: "ada",
    email: "ada@example.com",
    name: "Ada",
  },
};

const entry = (key: string, overrides: Partial<CachedLogin> = {}): CachedLogin => ({
  key,
  workspace: { id: "0193f1c2-7a0e-7d4b-9d55-0a3c2f9b1e02", name: "acme" },
  target: { id: "0193f1c2-7a0e-7d4b-9d55-0a3c2f9b1e03", name: "web-01", endpoints: ["10.0.0.5:22"] },
  caId: "0193f1c2-7a0e-7d4b-9d55-0a3c2f9b1e04",
  caPublicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIC1fvNc5FqsHdZgKc7Rs3xWxOQeO9SeplIGl4jBRI4bN",
  logins: ["deploy", "root"],
  standing: ["deploy"],
  savedAt: Date.now(),
  ...overrides,
});

let dir: string;
let store: ConfigStore;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "wap-cli-login-cache-"));
  store = new ConfigStore(dir);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe("the login cache", () => {
  it("gives back what was saved, owner-only, and nothing to another device, user or server", async () => {
    const key = cacheKey(undefined, "web-01");
    await saveLogin(store, config, key, entry(key));
    expect((await stat(join(store.sshDir, "logins.json"))).mode & 0o777).toBe(0o600);
    expect(await cachedLogin(store, config, key)).toEqual(entry(key, { savedAt: expect.any(Number) }));
    expect(await cachedLogin(store, config, cacheKey("acme", "web-01"))).toBeUndefined();
    for (const other of [
      { ...config, deviceId: "0193f1c2-7a0e-7d4b-9d55-0a3c2f9b1eff" },
      { ...config, server: "https://other.example.com" },
      { ...config, user: { ...config.user!, id: "0193f1c2-7a0e-7d4b-9d55-0a3c2f9b1eff" } },
      {},
    ])
      expect(await cachedLogin(store, other, key)).toBeUndefined();
    // Saved as nothing (a login no longer held outright): forgotten.
    await saveLogin(store, config, key, undefined);
    expect(await cachedLogin(store, config, key)).toBeUndefined();
  });

  it("is used for an hour after the server said so, and not when its clock runs backwards", () => {
    fc.assert(
      fc.property(fc.integer({ min: -loginCacheMaxAgeMs, max: 2 * loginCacheMaxAgeMs }), (age) => {
        const now = 1_800_000_000_000;
        expect(isFresh(entry("k", { savedAt: now - age }), now)).toBe(age >= 0 && age < loginCacheMaxAgeMs);
      }),
    );
  });

  it("keeps at most its limit of destinations, the last saved first, one entry per destination", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.constantFrom(..."abcdefghij".split("")).chain((c) => fc.nat(80).map((n) => `${c}${n}`)),
          { maxLength: 200 },
        ),
        (keys) => {
          let entries: CachedLogin[] = [];
          for (const key of keys) entries = withEntry(entries, key, entry(key));
          expect(entries.length).toBeLessThanOrEqual(loginCacheMaxEntries);
          expect(new Set(entries.map((e) => e.key)).size).toBe(entries.length);
          if (keys.length > 0) expect(entries[0]!.key).toBe(keys.at(-1));
        },
      ),
    );
  });

  it("never uses an entry whose strings lost their form, or a file that is not its own", async () => {
    const hostile = fc.oneof(
      fc.constant("-oProxyCommand=touch x"),
      fc.constant("web\n01"),
      fc.constant("../etc"),
      fc.constant(""),
      fc.string({ unit: "binary", maxLength: 20 }),
    );
    fc.assert(
      fc.property(hostile, (bad) => {
        expect(
          isUsableEntry(entry("k", { target: { id: bad, name: "web-01", endpoints: ["10.0.0.5"] } })),
        ).toBe(false);
        // An endpoint or a name is used only in the form the server's rules give it.
        const target = entry("k").target;
        if (isUsableEntry(entry("k", { target: { ...target, endpoints: [bad] } })))
          expect(endpointOf(bad)).toBeDefined();
        if (isUsableEntry(entry("k", { target: { ...target, name: bad } }))) expect(bad).toMatch(/^[\w.-]+$/);
        expect(isUsableEntry(entry("k", { caId: bad }))).toBe(false);
        expect(isUsableEntry(entry("k", { workspace: { id: bad, name: "x" } }))).toBe(false);
        if (isUsableEntry(entry("k", { logins: [bad], standing: [bad] })))
          expect(isLoginName(bad)).toBe(true);
      }),
    );
    expect(
      isUsableEntry(entry("k", { target: { ...entry("k").target, endpoints: ["-oProxyCommand=x"] } })),
    ).toBe(false);
    expect(isUsableEntry(entry("k", { target: { ...entry("k").target, endpoints: [] } }))).toBe(false);
    expect(isUsableEntry(entry("k", { standing: ["admin"] }))).toBe(false);
    const key = cacheKey(undefined, "web-01");
    for (const text of ["not json", "null", "[]", JSON.stringify({ ...config, entries: "x" })]) {
      await writeFile(join(store.sshDir, "logins.json"), text);
      expect(await cachedLogin(store, config, key)).toBeUndefined();
    }
    await writeFile(
      join(store.sshDir, "logins.json"),
      JSON.stringify({
        server: config.server,
        userId: config.user!.id,
        deviceId: config.deviceId,
        entries: [entry(key, { target: { ...entry(key).target, endpoints: ["-oProxyCommand=x"] } })],
      }),
    );
    expect(await cachedLogin(store, config, key)).toBeUndefined();
    expect(await readFile(join(store.sshDir, "logins.json"), "utf8")).toContain("ProxyCommand");
  });

  it("names only a login held outright: the one asked for, else the first granted", () => {
    const e = entry("k");
    expect(cachedLoginName(e, undefined)).toBe("deploy");
    expect(cachedLoginName(e, "deploy")).toBe("deploy");
    expect(cachedLoginName(e, "root")).toBeUndefined();
    expect(cachedLoginName(e, "nobody")).toBeUndefined();
    expect(cachedLoginName(entry("k", { logins: ["root", "deploy"] }), undefined)).toBeUndefined();
  });
});
