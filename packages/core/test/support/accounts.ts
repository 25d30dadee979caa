/**
 * Account-flow test helpers: a platform with a mailer that records what it sends, and ways to
 * read the tokens out of the mails.
 */
import type { AccountConfig } from "../../src/auth/account-config.js";
import type { Mailer, MailMessage } from "../../src/mail/mailer.js";
import { createTestPlatform } from "../support.js";

export const publicBaseUrl = "https://app.example.test";

/** A mailer that keeps every mail, and lets a test wait for the next one to someone. */
export function createMemoryMailer() {
  const sent: MailMessage[] = [];
  const waiters: Array<{ to: string; resolve: (m: MailMessage) => void }> = [];
  const mailer: Mailer = {
    async send(message) {
      sent.push(message);
      for (const waiter of waiters.splice(0)) {
        if (waiter.to === message.to) waiter.resolve(message);
        else waiters.push(waiter);
      }
    },
  };
  return {
    mailer,
    sent,
    /** The next mail to `to`, or one already sent and not yet taken. */
    next(to: string): Promise<MailMessage> {
      const index = sent.findIndex((m) => m.to === to);
      if (index >= 0) return Promise.resolve(sent.splice(index, 1)[0]!);
      return new Promise((resolve) => {
        waiters.push({
          to,
          resolve: (m) => {
            sent.splice(sent.indexOf(m), 1);
            resolve(m);
          },
        });
      });
    },
  };
}

/** The value of `param` in the first link of a mail's text. */
export function linkParam(mail: Pick<MailMessage, "text">, param: string): string {
  const link = /https?:\/\/\S+/.exec(mail.text)?.[0];
  if (link === undefined) throw new Error(`no link in mail: ${mail.text}`);
  const value = new URL(link).searchParams.get(param);
  if (value === null) throw new Error(`no ${param} in ${link}`);
  return value;
}

/** A test platform with a recording mailer and account settings for tests. */
export async function createAccountsPlatform(config: Partial<AccountConfig> = {}) {
  const mail = createMemoryMailer();
  const t = await createTestPlatform({ config: { publicBaseUrl, ...config }, mailer: mail.mailer });
  return { ...t, mail };
}

export type AccountsPlatform = Awaited<ReturnType<typeof createAccountsPlatform>>;

/** Lets background mail sends run. */
export const settle = () => new Promise((resolve) => setTimeout(resolve, 5));
