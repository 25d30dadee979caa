/**
 * Account-flow test helpers: a platform with a mailer that records what it sends, and ways to
 * read the tokens out of the mails.
 */

import { createMemoryMailer } from "@wap/test-kit/mail";
import type { AccountConfig } from "../../src/auth/account-config.js";
import type { MailMessage } from "../../src/mail/mailer.js";
import { createTestPlatform } from "../support.js";

export { createMemoryMailer };

export const publicBaseUrl = "https://app.example.test";

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
