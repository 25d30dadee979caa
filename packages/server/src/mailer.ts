/**
 * The mailer the server gives the platform: an SMTP relay when one is configured; otherwise, on
 * the embedded SQLite default, an outbox of `.eml` files in the data directory, so a self-hoster
 * can finish sign-up and password reset without a mail server. Over PostgreSQL without a relay
 * no mail is sent (an outbox on one instance's disk would be a trap when there are several).
 *
 * @module
 */
import { join } from "node:path";
import { createOutboxMailer, createSmtpMailer, type Mailer } from "@wap/core";
import { missingMailFrom, type ServerConfig } from "./config.js";
import type { Logger } from "./logger.js";
import { StartupError } from "./startup-error.js";

/** Builds the mailer for `config`; `embedded` is true when the storage is not PostgreSQL. */
export function createServerMailer(
  config: Pick<ServerConfig, "smtpUrl" | "mailFrom" | "dataDir">,
  embedded: boolean,
  logger: Logger,
): Mailer | undefined {
  // Mails go out in the background: a failure is seen here or nowhere. The subject says which
  // flow it was; the recipient and the body (a sign-in link) stay out of the log.
  const onError = (error: unknown, message: { subject: string }) =>
    logger.warn("mail not sent", { subject: message.subject, error: String(error) });
  if (config.smtpUrl !== undefined) {
    if (config.mailFrom === undefined) throw new StartupError(missingMailFrom);
    // The URL may carry the relay's password: only its host is logged.
    logger.info("mail goes through an SMTP relay", { host: new URL(config.smtpUrl).host });
    return createSmtpMailer({ transport: config.smtpUrl, from: config.mailFrom, onError });
  }
  if (!embedded) {
    logger.warn("no mail relay configured: account mails are not sent; set WAP_SMTP_URL and WAP_MAIL_FROM");
    return undefined;
  }
  const directory = join(config.dataDir, "outbox");
  logger.info("no mail relay configured: account mails are written to the outbox", { directory });
  return createOutboxMailer({
    directory,
    ...(config.mailFrom !== undefined && { from: config.mailFrom }),
    log: (_line, written) => logger.info("mail written to the outbox", { ...written }),
    onError,
  });
}
