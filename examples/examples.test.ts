import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer, silentLogger } from "@wap/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main as runClientScript } from "./client-script.js";
import { main as runEmbedded } from "./embed-core.js";

describe("examples", () => {
  let server: Awaited<ReturnType<typeof createServer>>;
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "wap-examples-"));
    server = await createServer({ port: 0, dataDir, logger: silentLogger });
  });
  afterAll(async () => {
    await server.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("embeds the core and creates an SSH CA without any server", async () => {
    const { workspaceId, caPublicKey } = await runEmbedded();
    expect(workspaceId).toMatch(/^[0-9a-f-]{36}$/);
    expect(caPublicKey).toMatch(/^ssh-ed25519 /);
  });

  it("the client script registers on first run and finds its CA again on the second", async () => {
    const first = await runClientScript(server.url);
    const second = await runClientScript(server.url);
    expect(first.user.username).toBe("ops");
    expect(second.ca.id).toBe(first.ca.id);
    expect(second.workspace.id).toBe(first.workspace.id);
    expect(first.ca.publicKey).toMatch(/^ssh-ed25519 /);
  });
});
