/**
 * A {@link Mailer} that writes each email as an `.eml` file into a directory and reports a log
 * line: the embedded default, so a self-hoster can finish sign-up and password reset without a
 * mail server (open the file, follow the link).
 *
 * @module
 */
import { randomBytes } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createTransport } from "nodemailer";
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

/** Where one mail went. The file holds the mail's links (sign-in secrets); these fields do not. */
export interface OutboxWrite {
  readonly file: string;
  readonly subject: string;
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
  // nodemailer's stream transport builds the same RFC 5322 message SMTP would carry.
  const builder = createTransport({ streamTransport: true, buffer: true, newline: "unix" });
  let ready: Promise<unknown> | undefined;
  async function write(message: MailMessage): Promise<OutboxWrite> {
    ready ??= mkdir(options.directory, { recursive: true, mode: 0o700 });
    await ready;
    const info = await builder.sendMail({
      from: options.from ?? "no-reply@localhost",
      to: message.to,
      subject: message.subject,
      text: message.text,
      ...(message.html === undefined ? {} : { html: message.html }),
    });
    // Sortable by time; the random part keeps two mails of one millisecond apart.
    const name = `${new Date().toISOString().replace(/[:.]/g, "-")}-${randomBytes(4).toString("hex")}.eml`;
    const file = join(options.directory, name);
    // The mails carry sign-in secrets (reset links): only the server's user may read them.
    await writeFile(file, info.message as Buffer, { mode: 0o600, flag: "wx" });
    return { file, subject: message.subject };
  }
  return {
    async send(message) {
      try {
        const written = await write(message);
        options.log?.(
          `mail to ${message.to} (${JSON.stringify(written.subject)}) written to ${written.file}`,
          written,
        );
      } catch (error) {
        options.onError?.(error, message);
        throw error;
      }
    },
  };
}
