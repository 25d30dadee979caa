/**
 * /install/: the release folder's packages, served only when they match the SHA-256 it lists,
 * the sums of exactly those, and the agent's install script with the server's URL written in.
 */
import { createHash } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type InstallFiles, loadInstallFiles } from "../src/install-files.js";

const sha256 = (body: string) => createHash("sha256").update(body).digest("hex");

let dir: string;
let release: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "wap-install-"));
  release = join(dir, "release");
  await mkdir(release);
  await writeFile(join(release, "wap-agent_1.0.0_amd64.deb"), "deb bytes");
  await writeFile(join(release, "wap-cli-1.0.0.tgz"), "tgz bytes");
  await writeFile(join(release, "wap-agent-1.0.0.tgz"), "changed after it was listed");
  await writeFile(join(release, "secret.txt"), "not a package");
  await writeFile(
    join(release, "SHA256SUMS"),
    [
      `${sha256("deb bytes")}  wap-agent_1.0.0_amd64.deb`,
      `${sha256("tgz bytes")}  wap-cli-1.0.0.tgz`,
      `${sha256("the listed bytes")}  wap-agent-1.0.0.tgz`,
      `${sha256("not a package")}  secret.txt`,
      `${sha256("missing")}  wap-1.0.0.tgz`,
      "",
    ].join("\n"),
  );
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function served(files: InstallFiles, run: (url: string) => Promise<void>): Promise<void> {
  const server: Server = createServer((req, res) => files.serve(req, res, req.url ?? "/"));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  try {
    await run(`http://127.0.0.1:${port}`);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

describe("the install files", () => {
  it("serves the listed packages that match their sums, their sums, and agent.sh for this server", async () => {
    const files = await loadInstallFiles({ dir: release, serverUrl: "https://wap.example.com/" });
    expect(files.packages).toEqual(["wap-agent_1.0.0_amd64.deb", "wap-cli-1.0.0.tgz"]);
    await served(files, async (url) => {
      const deb = await fetch(`${url}/install/wap-agent_1.0.0_amd64.deb`);
      expect(deb.headers.get("content-type")).toBe("application/vnd.debian.binary-package");
      expect(await deb.text()).toBe("deb bytes");
      expect(await (await fetch(`${url}/install/SHA256SUMS`)).text()).toBe(
        `${sha256("deb bytes")}  wap-agent_1.0.0_amd64.deb\n${sha256("tgz bytes")}  wap-cli-1.0.0.tgz\n`,
      );
      for (const refused of ["wap-agent-1.0.0.tgz", "secret.txt", "wap-1.0.0.tgz", "..%2FSHA256SUMS"]) {
        expect((await fetch(`${url}/install/${refused}`)).status, refused).toBe(404);
      }
      const script = await (await fetch(`${url}/install/agent.sh`)).text();
      expect(script).toContain(`WAP_SERVER="\${WAP_SERVER:-https://wap.example.com}"`);
      expect(script).not.toContain("@WAP_SERVER_URL@");
      const head = await fetch(`${url}/install/wap-cli-1.0.0.tgz`, { method: "HEAD" });
      expect(head.headers.get("content-length")).toBe("9");
    });
  });

  it("without a release, says so for the script and the packages", async () => {
    const files = await loadInstallFiles({ dir: join(dir, "none"), serverUrl: "https://wap.example.com" });
    await served(files, async (url) => {
      const script = await fetch(`${url}/install/agent.sh`);
      expect(script.status).toBe(404);
      expect(await script.text()).toMatch(/carries no release packages/);
    });
  });

  it("refuses a public URL the shell would expand inside the script", async () => {
    for (const url of ['https://wap.example.com/"; rm -rf /', "https://wap.example.com/$(id)", "ftp://x"]) {
      await expect(loadInstallFiles({ dir: release, serverUrl: url }), url).rejects.toThrow(/install script/);
    }
  });
});
