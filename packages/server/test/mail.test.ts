/**
 * Account mails through the real server: into the outbox of the embedded default (files and a log
 * line without the link), and through a real SMTP relay on loopback (the smtp-server package).
 */
import { readdir, readFile } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { restCall } from "@wap/test-kit/http";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { SMTPServer } from "smtp-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** Quoted-printable soft breaks and escapes undone (nodemailer uses QP for long lines). */
const decoded = (raw: string) =>
  raw
    .replace(/=\r?\n/g, "")
    .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));

const verifyLink = /https:\/\/wap\.example\/verify-email\?token=[A-Za-z0-9_-]+/;

async function register(server: TestServer, name: string) {
  const email = `${name}-${process.pid}@example.com`;
  const registered = await restCall(server.url, "POST", "/v1/register", {
    name: `${name} tester`,
    email,
    username: `${name}${process.pid}`,
    password: "correct horse battery staple",
  });
  expect(registered.status).toBe(200);
  return email;
}

async function eventually<T>(probe: () => Promise<T | undefined>, timeoutMs = 5000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error("timed out waiting");
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe("outbox on the embedded default", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ publicUrl: "https://wap.example" });
  });
  afterAll(() => server?.close());

  it("writes the verification mail of Register into <data dir>/outbox and logs where", async () => {
    const email = await register(server, "outboxada");
    const outbox = join(server.dataDir, "outbox");
    const file = await eventually(async () =>
      (await readdir(outbox).catch(() => [])).find((f) => f.endsWith(".eml")),
    );
    // Written in 8 bits: read as it is, no quoted-printable to undo.
    const mail = await readFile(join(outbox, file), "utf8");
    expect(mail).toMatch(new RegExp(`^To: ${email}$`, "m"));
    expect(mail).toContain("Confirm your email address");
    const link = verifyLink.exec(mail)?.[0];
    expect(link).toBeDefined();

    // The link is one line in the file, as it is mailed.
    expect(await readFile(join(outbox, file), "utf8")).toContain(`\n${link}\n`);
    // The log names the file, the subject and the link to follow (the operator reads the outbox
    // anyway); never the address.
    const line = server.logs.find((l) => l.includes("mail written to the outbox"));
    expect(JSON.parse(line!)).toMatchObject({
      level: "info",
      file: join(outbox, file),
      subject: expect.stringContaining("Confirm your email address"),
      link,
    });
    // The link works: VerifyEmail takes its token once.
    const token = new URL(link!).searchParams.get("token")!;
    const verify = `/v1/verify-email?token=${encodeURIComponent(token)}`;
    expect((await restCall(server.url, "POST", verify)).status).toBe(200);
    expect((await restCall(server.url, "POST", verify)).status).toBe(400);
    expect(server.logs.join("\n")).not.toContain(email);
  });
});

describe("SMTP relay", () => {
  const inbox: { to: string[]; raw: string }[] = [];
  let smtp: SMTPServer;
  let server: TestServer;
  beforeAll(async () => {
    smtp = new SMTPServer({
      authOptional: true,
      disabledCommands: ["STARTTLS"],
      logger: false,
      onData(stream, session, callback) {
        const chunks: Buffer[] = [];
        stream.on("data", (chunk: Buffer) => chunks.push(chunk));
        stream.on("end", () => {
          inbox.push({
            to: session.envelope.rcptTo.map((r) => r.address),
            raw: Buffer.concat(chunks).toString("utf8"),
          });
          callback();
        });
      },
    });
    await new Promise<void>((resolve) => smtp.listen(0, "127.0.0.1", resolve));
    const { port } = smtp.server.address() as AddressInfo;
    server = await startTestServer({
      publicUrl: "https://wap.example",
      smtpUrl: `smtp://127.0.0.1:${port}`,
      mailFrom: '"Workspace Access Platform" <no-reply@wap.example>',
    });
  });
  afterAll(async () => {
    await server?.close();
    await new Promise<void>((resolve) => smtp.close(() => resolve()));
  });

  it("delivers the verification mail of Register to the relay, and nothing to the outbox", async () => {
    const email = await register(server, "smtpada");
    const mail = await eventually(async () => inbox.find((m) => m.to.includes(email)));
    const text = decoded(mail.raw);
    expect(text).toMatch(/^From: "?Workspace Access Platform"? <no-reply@wap\.example>$/m);
    expect(text).toContain("Confirm your email address");
    expect(verifyLink.test(text)).toBe(true);
    expect(await readdir(join(server.dataDir, "outbox")).catch(() => "none")).toBe("none");
    expect(server.logs.some((l) => l.includes("mail goes through an SMTP relay"))).toBe(true);
  });
});
