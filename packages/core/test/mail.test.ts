import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AuthService, UserService } from "@wap/api";
import { SMTPServer } from "smtp-server";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createOutboxMailer } from "../src/mail/outbox.js";
import { createSmtpMailer } from "../src/mail/smtp.js";
import { publicBaseUrl } from "./support/accounts.js";
import { createTestPlatform, expectCode } from "./support.js";

/** A real SMTP receiver on loopback that keeps what it gets. */
interface Received {
  readonly from: string;
  readonly to: string[];
  readonly raw: string;
}

let smtp: SMTPServer;
let port = 0;
const inbox: Received[] = [];
const arrivals: Array<() => void> = [];

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
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString("utf8"),
        });
        for (const wake of arrivals.splice(0)) wake();
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, "127.0.0.1", resolve));
  port = (smtp.server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => smtp.close(() => resolve())));

/** Waits for a mail to `to` to arrive at the receiver. */
async function mailTo(to: string): Promise<Received> {
  for (;;) {
    const index = inbox.findIndex((m) => m.to.includes(to));
    if (index >= 0) return inbox.splice(index, 1)[0]!;
    await new Promise<void>((resolve) => {
      arrivals.push(resolve);
      setTimeout(resolve, 2000);
    });
  }
}

/** Quoted-printable soft breaks and escapes undone (nodemailer uses QP for long lines). */
const decoded = (raw: string) =>
  raw
    .replace(/=\r?\n/g, "")
    .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));

const smtpMailer = (onError?: (error: unknown) => void) =>
  createSmtpMailer({
    transport: { host: "127.0.0.1", port, secure: false, ignoreTLS: true },
    from: '"Workspace Access Platform" <no-reply@wap.example>',
    ...(onError ? { onError } : {}),
  });

describe("SMTP mailer", () => {
  it("delivers subject, text and HTML to a real SMTP server", async () => {
    const mailer = smtpMailer();
    try {
      await mailer.send({
        to: "grace@example.com",
        subject: "Héllo ✓",
        text: "plain words",
        html: "<p>rich words</p>",
      });
      const mail = await mailTo("grace@example.com");
      expect(mail.from).toBe("no-reply@wap.example");
      expect(mail.raw).toMatch(/^Subject: =\?UTF-8\?/m);
      expect(decoded(mail.raw)).toContain("plain words");
      expect(decoded(mail.raw)).toContain("<p>rich words</p>");
      expect(mail.raw).toMatch(/multipart\/alternative/);
    } finally {
      await mailer.close?.();
    }
  });

  it("reports a failed send to onError and rejects", async () => {
    const errors: unknown[] = [];
    const mailer = createSmtpMailer({
      transport: { host: "127.0.0.1", port: 1, secure: false, ignoreTLS: true, connectionTimeout: 2000 },
      from: "no-reply@wap.example",
      onError: (error) => errors.push(error),
    });
    await expect(mailer.send({ to: "x@example.com", subject: "s", text: "t" })).rejects.toThrow();
    expect(errors).toHaveLength(1);
  });
});

describe("outbox mailer", () => {
  let dir: string;
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it("writes each mail as a private .eml file and logs a line naming it", async () => {
    dir = await mkdtemp(join(tmpdir(), "wap-outbox-"));
    const outbox = join(dir, "outbox");
    const lines: string[] = [];
    const mailer = createOutboxMailer({ directory: outbox, log: (line) => lines.push(line) });
    const link = `https://x.test/reset-password?token=${"a".repeat(43)}&next=%2Finvites%2F${"b".repeat(43)}`;
    await mailer.send({
      to: "ada@example.com",
      subject: "Reset",
      text: `follow\n\n${link}\n`,
      html: `<p><a href="${link}">${link}</a></p>`,
      link,
    });
    await mailer.send({ to: "bob@example.com", subject: "Verify", text: "hello" });
    const files = (await readdir(outbox)).sort();
    expect(files).toHaveLength(2);
    expect(files.every((f) => f.endsWith(".eml"))).toBe(true);
    const first = join(outbox, files.find((f) => lines[0]!.includes(f))!);
    expect((await stat(first)).mode & 0o777).toBe(0o600);
    expect((await stat(outbox)).mode & 0o777).toBe(0o700);
    const text = await readFile(first, "utf8");
    expect(text).toMatch(/^To: ada@example.com$/m);
    expect(text).toMatch(/^Subject: Reset$/m);
    // The long link is one line of the file, not quoted-printable pieces.
    expect(text).toContain(`\n${link}\n`);
    expect(text).toMatch(/^Content-Transfer-Encoding: 8bit$/m);
    expect(lines[0]).toMatch(
      /^mail to ada@example.com \("Reset"\) written to .*\.eml: https:\/\/x\.test\/reset-password\?token=a+&next=/,
    );
  });
});

describe("account mails over SMTP", () => {
  it("Register mails a verification link that VerifyEmail accepts once", async () => {
    const mailer = smtpMailer();
    const t = await createTestPlatform({ config: { publicBaseUrl }, mailer });
    try {
      const { caller, email } = await t.signUp("smtpada");
      const mail = decoded((await mailTo(email)).raw);
      expect(mail).toContain("Confirm your email address");
      const link = /https:\/\/app\.example\.test\/verify-email\?token=[A-Za-z0-9_-]+/.exec(mail)?.[0];
      expect(link).toBeDefined();
      const token = new URL(link!).searchParams.get("token")!;
      await t.call({ kind: "anonymous" }, AuthService.method.verifyEmail, { token });
      expect((await t.call(caller, UserService.method.whoami, {})).user?.emailVerified).toBe(true);
      await expectCode(
        t.call({ kind: "anonymous" }, AuthService.method.verifyEmail, { token }),
        "invalid_argument",
      );
    } finally {
      await mailer.close?.();
      await t.platform.close();
    }
  });

  it("ForgotPassword mails a reset link; ResetPassword with it changes the password", async () => {
    const mailer = smtpMailer();
    const t = await createTestPlatform({ config: { publicBaseUrl }, mailer });
    try {
      const { email } = await t.signUp("smtpbob");
      await mailTo(email); // the verification mail
      await t.call({ kind: "anonymous" }, AuthService.method.forgotPassword, { email });
      const mail = decoded((await mailTo(email)).raw);
      const token = new URL(
        /https:\/\/\S+reset-password\?token=[A-Za-z0-9_-]+/.exec(mail)![0],
      ).searchParams.get("token")!;
      await t.call({ kind: "anonymous" }, AuthService.method.resetPassword, {
        token,
        newPassword: "a brand new passphrase",
      });
      await t.call({ kind: "anonymous" }, AuthService.method.login, {
        email,
        password: "a brand new passphrase",
      });
    } finally {
      await mailer.close?.();
      await t.platform.close();
    }
  });
});
