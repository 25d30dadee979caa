/**
 * A {@link Mailer} over SMTP (nodemailer): STARTTLS or implicit TLS, optional authentication,
 * pooled connections.
 *
 * @module
 */
import type { Transporter } from "nodemailer";
import type SMTPTransport from "nodemailer/lib/smtp-transport";
import type { Mailer, MailMessage } from "./mailer.js";

export interface SmtpMailerOptions {
  /** `smtp://user:pass@host:587` or `smtps://host:465`, or nodemailer's SMTP options. */
  readonly transport: string | SMTPTransport.Options;
  /** The sender, e.g. `"Workspace Access Platform" <no-reply@example.com>`. */
  readonly from: string;
  /** Told about every failed send (core sends in the background, so nobody else sees it). */
  readonly onError?: (error: unknown, message: MailMessage) => void;
}

/**
 * Sends mail through an SMTP relay.
 *
 * @example
 * ```ts
 * const mailer = createSmtpMailer({ transport: "smtp://mail.example.com:587", from: "no-reply@example.com" });
 * ```
 */
export function createSmtpMailer(options: SmtpMailerOptions): Mailer {
  // nodemailer is loaded with the first message: a platform that sends none never loads it.
  let transporter: Promise<Transporter<SMTPTransport.SentMessageInfo>> | undefined;
  const transport = () =>
    (transporter ??= import("nodemailer").then(({ createTransport }) => createTransport(options.transport)));
  return {
    async send(message) {
      try {
        await (await transport()).sendMail({
          from: options.from,
          to: message.to,
          subject: message.subject,
          text: message.text,
          ...(message.html === undefined ? {} : { html: message.html }),
        });
      } catch (error) {
        options.onError?.(error, message);
        throw error;
      }
    },
    async close() {
      (await transporter)?.close();
    },
  };
}
