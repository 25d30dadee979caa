/**
 * The mail port: how core sends the emails of account flows (verification, password reset).
 * Adapters: SMTP ({@link ./smtp.ts}) and an outbox directory ({@link ./outbox.ts}) for
 * self-hosters without a mail server.
 *
 * @module
 */
import type { Services } from "../operations/services.js";

/** One email. `text` is always sent; `html` is an optional alternative body. */
export interface MailMessage {
  readonly to: string;
  readonly subject: string;
  readonly text: string;
  readonly html?: string;
  /** The one link the mail is about (also in `text`), for an outbox to log. */
  readonly link?: string;
}

/** Sends emails. `send` resolves once the message is handed over (accepted by the relay or written). */
export interface Mailer {
  send(message: MailMessage): Promise<void>;
  /** Releases connections or files; the mailer is unusable afterwards. */
  close?(): Promise<void>;
}

/** The platform's mailer, if it has one. */
export function mailerOf(services: Services): Mailer | undefined {
  return services.mailer;
}
