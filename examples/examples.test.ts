import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { silentLogger as quietAgent } from "@wap/agent";
import { CertificateKeyType, DaemonStatus } from "@wap/api";
import { createPlatformClient } from "@wap/client";
import { createServer, silentLogger } from "@wap/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main as runClientScript } from "./client-script.js";
import { main as runEmbedded } from "./embed-core.js";
import { startLocalAgent } from "./local-agent.js";

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

  it("the local agent enrols, shows up PENDING and online, stops cleanly, and once rejected ends with 4", async () => {
    const ops = createPlatformClient({ baseUrl: server.url });
    await ops.auth.register({
      name: "Dev",
      email: "dev@example.com",
      username: "dev",
      password: "correct horse battery staple",
    });
    await ops.login("dev@example.com", "correct horse battery staple");
    const workspaceId = (await ops.workspaces.createWorkspace({ name: "Demo" })).workspace!.id;
    await ops.certificates.createCertificateAuthority({
      workspaceId,
      name: "ssh",
      keyType: CertificateKeyType.ED25519,
    });
    const token = (await ops.daemons.refreshEnrollToken({ workspaceId })).token;
    const agent = await startLocalAgent({
      url: server.url,
      dir: join(dataDir, "agent"),
      token,
      log: quietAgent,
    });
    const synced = await new Promise<{ status: DaemonStatus }>((resolve) =>
      agent.events.once("synced", resolve),
    );
    expect(synced.status).toBe(DaemonStatus.PENDING);
    for (;;) {
      const { daemon } = await ops.daemons.getDaemon({ workspaceId, id: agent.enrolment.daemonId });
      if (daemon!.online) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await agent.stop();
    expect(await agent.done).toEqual({ exitCode: 0, reason: "stopped" });

    // Started again it is the same daemon; rejected, it forgets its enrolment and ends with 4.
    const again = await startLocalAgent({ url: server.url, dir: join(dataDir, "agent"), log: quietAgent });
    expect(again.enrolment.daemonId).toBe(agent.enrolment.daemonId);
    await ops.daemons.updateDaemon({
      workspaceId,
      id: again.enrolment.daemonId,
      status: DaemonStatus.REJECTED,
    });
    expect(await again.done).toEqual({ exitCode: 4, reason: "the daemon was rejected by an administrator" });
    await expect(
      startLocalAgent({ url: server.url, dir: join(dataDir, "agent"), log: quietAgent }),
    ).rejects.toThrow(/not enrolled/);
  });
});
