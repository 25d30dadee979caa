/** Mail kept in memory, for tests that read what the platform sends. */
import type { Mailer, MailMessage } from "@wap/core";

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
