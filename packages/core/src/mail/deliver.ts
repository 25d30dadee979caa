import type { Services } from "../operations/services.js";
import { type MailMessage, mailerOf } from "./mailer.js";

/**
 * Hands a mail to the platform's mailer without waiting. The answer of an account flow, and its
 * timing, must not depend on whether a mail went out, or it would tell which accounts exist;
 * adapters report their own failures (`onError`, `log`). Returns false when there is no mailer.
 */
export function sendInBackground(services: Services, message: MailMessage): boolean {
  const mailer = mailerOf(services);
  if (mailer === undefined) return false;
  void mailer.send(message).catch(() => undefined);
  return true;
}
