/**
 * A {@link Mailer} that writes each email as an `.eml` file into a directory and reports a log
 * line with the mail's link: the embedded default, so a self-hoster can finish sign-up and
 * password reset without a mail server (follow the logged link, or open the file).
 *
 * The file is written for a person to read as much as for a mail client: 8-bit UTF-8 bodies
 * whose lines stay as they are, so a link is one line to copy. (A relay needs quoted-printable
 * for long lines, which breaks a link across lines; a file does not.)
 *
 * @module
 */
import { randomBytes } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Mailer, MailMessage } from "./mailer.js";

export interface OutboxMailerOptions {
  /** Where the files go; created (mode 0700) when missing. */
  readonly directory: string;
  /** The sender written into the files. Default `no-reply@localhost`. */
  readonly from?: string;
  /**
   * Receives one line per mail, naming the recipient, the subject and the file; `written` has the
   * file and subject alone, for logs that should not carry addresses.
   */
  readonly log?: (line: string, written: OutboxWrite) => void;
  /** Told about every failed write (core sends in the background, so nobody else sees it). */
  readonly onError?: (error: unknown, message: MailMessage) => void;
}

/** Where one mail went, and the link it carries (a sign-in secret, as the file holds it). */
export interface OutboxWrite {
  readonly file: string;
  readonly subject: string;
  readonly link?: string;
}

/** A header value: printable ASCII as is, anything else (or a line break) as an RFC 2047 word. */
function headerValue(value: string): string {
  return /^[\x20-\x7e]*$/.test(value)
    ? value
    : `=?UTF-8?B?${Buffer.from(value, "utf8").toString("base64")}?=`;
}

/** The message as RFC 5322 text with MIME bodies in 8-bit UTF-8 (lines kept whole). */
function messageText(message: MailMessage, from: string, id: string): string {
  const head = [
    `From: ${headerValue(from)}`,
    `To: ${headerValue(message.to)}`,
    `Subject: ${headerValue(message.subject)}`,
    `Date: ${new Date().toUTCString()}`,
    `Message-ID: <${id}@outbox.invalid>`,
    "MIME-Version: 1.0",
  ];
  const part = (type: string, body: string) =>
    [`Content-Type: ${type}; charset=utf-8`, "Content-Transfer-Encoding: 8bit", "", body].join("\n");
  if (message.html === undefined) return `${[...head, part("text/plain", message.text)].join("\n")}\n`;
  const boundary = `alt-${id}`;
  return `${[
    ...head,
    `Content-Type: multipart/alternative; boundary="${boundary}"`,
    "",
    `--${boundary}`,
    part("text/plain", message.text),
    `--${boundary}`,
    part("text/html", message.html),
    `--${boundary}--`,
  ].join("\n")}\n`;
}

/**
 * Writes mails to files instead of sending them.
 *
 * @example
 * ```ts
 * const mailer = createOutboxMailer({ directory: join(dataDir, "outbox"), log: console.info });
 * ```
 */
export function createOutboxMailer(options: OutboxMailerOptions): Mailer {
  let ready: Promise<unknown> | undefined;
  async function write(message: MailMessage): Promise<OutboxWrite> {
    ready ??= mkdir(options.directory, { recursive: true, mode: 0o700 });
    await ready;
    const id = randomBytes(12).toString("hex");
    const text = messageText(message, options.from ?? "no-reply@localhost", id);
    // Sortable by time; the random part keeps two mails of one millisecond apart.
    const name = `${new Date().toISOString().replace(/[:.]/g, "-")}-${id.slice(0, 8)}.eml`;
    const file = join(options.directory, name);
    // The mails carry sign-in secrets (reset links): only the server's user may read them.
    await writeFile(file, text, { mode: 0o600, flag: "wx" });
    return { file, subject: message.subject, ...(message.link !== undefined && { link: message.link }) };
  }
  return {
    async send(message) {
      try {
        const written = await write(message);
        options.log?.(
          `mail to ${message.to} (${JSON.stringify(written.subject)}) written to ${written.file}${written.link ? `: ${written.link}` : ""}`,
          written,
        );
      } catch (error) {
        options.onError?.(error, message);
        throw error;
      }
    },
  };
}
