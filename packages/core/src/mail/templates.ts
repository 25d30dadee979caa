/**
 * The account mails. Plain text first (every client shows it); the HTML part only wraps the same
 * words and link.
 *
 * @module
 */
import type { MailMessage } from "./mailer.js";

const product = "Workspace Access Platform";

function escapeHtml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c,
  );
}

function compose(to: string, subject: string, lines: readonly string[], link?: string): MailMessage {
  const text = [...lines, ...(link === undefined ? [] : ["", link]), "", `-- ${product}`].join("\n");
  const paragraphs = lines.map((line) => `<p>${escapeHtml(line)}</p>`).join("");
  const anchor = link === undefined ? "" : `<p><a href="${escapeHtml(link)}">${escapeHtml(link)}</a></p>`;
  return {
    to,
    subject,
    text,
    html: `<!doctype html><html><body>${paragraphs}${anchor}</body></html>`,
    ...(link !== undefined && { link }),
  };
}

const hours = (seconds: number) =>
  seconds % 3600 === 0 ? `${seconds / 3600} hour(s)` : `${Math.round(seconds / 60)} minute(s)`;

/** Sent after sign-up: confirms the address. */
export function verifyEmailMail(to: string, link: string, ttlSeconds: number): MailMessage {
  return compose(
    to,
    `Confirm your email address for ${product}`,
    [
      "Confirm that this is your email address by opening the link below.",
      `The link works once and expires in ${hours(ttlSeconds)}. If you did not sign up, ignore this mail.`,
    ],
    link,
  );
}

/** Sent to the new address when a user changes their email. */
export function changeEmailMail(to: string, link: string, ttlSeconds: number): MailMessage {
  return compose(
    to,
    `Confirm your new email address for ${product}`,
    [
      "Someone asked to use this address for their account. If it was you, confirm it with the link below.",
      `The link works once and expires in ${hours(ttlSeconds)}. Until then, the old address stays in use.`,
    ],
    link,
  );
}

/** Sent by ForgotPassword. */
export function resetPasswordMail(to: string, link: string, ttlSeconds: number): MailMessage {
  return compose(
    to,
    `Reset your ${product} password`,
    [
      "Set a new password with the link below. Doing so signs you out everywhere.",
      `The link works once and expires in ${hours(ttlSeconds)}. If you did not ask for it, ignore this mail.`,
    ],
    link,
  );
}

/** Sent to those who may approve a new access request. */
export function accessRequestMail(
  to: string,
  link: string,
  request: { requester: string; target: string; login: string; durationSeconds: number; reason: string },
): MailMessage {
  return compose(
    to,
    `${request.requester} asks for access to ${request.target}`,
    [
      `${request.requester} asks to log in as '${request.login}' on ${request.target} for ${hours(request.durationSeconds)}.`,
      request.reason === "" ? "No reason was given." : `Reason: ${request.reason}`,
      "Approve or deny the request in the console, or with `wap approve` / `wap deny`.",
    ],
    link,
  );
}
