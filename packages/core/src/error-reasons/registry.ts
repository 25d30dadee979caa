/**
 * Every error reason the platform sends, by area: the tables the error constructors take their
 * `reason` from, and docs/errors.md is written from.
 *
 * @module
 */
import type { ErrorCode } from "../errors.js";
import { accessReasons } from "./access.js";
import { accessRequestReasons } from "./access-requests.js";
import { auditReasons } from "./audit.js";
import { authReasons } from "./auth.js";
import { billingReasons } from "./billing.js";
import { certificateReasons } from "./certificates.js";
import { daemonReasons } from "./daemons.js";
import { deviceReasons } from "./devices.js";
import { domainReasons } from "./domains.js";
import { genericReasons } from "./generic.js";
import { memberReasons } from "./members.js";
import { codesOf, type ReasonEntry, type ReasonTable } from "./reason-table.js";
import { sessionReasons } from "./sessions.js";
import { ssoReasons } from "./sso.js";
import { targetReasons } from "./targets.js";
import { transportReasons } from "./transport.js";
import { webhookReasons } from "./webhooks.js";

/** The tables, by area (a reason is declared in one area only). */
export const errorReasons = {
  generic: genericReasons,
  transport: transportReasons,
  access: accessReasons,
  auth: authReasons,
  devices: deviceReasons,
  members: memberReasons,
  certificates: certificateReasons,
  targets: targetReasons,
  daemons: daemonReasons,
  sessions: sessionReasons,
  sso: ssoReasons,
  domains: domainReasons,
  billing: billingReasons,
  audit: auditReasons,
  accessRequests: accessRequestReasons,
  webhooks: webhookReasons,
} as const satisfies Readonly<Record<string, ReasonTable>>;

type Tables = typeof errorReasons;

/** An area of {@link errorReasons}. */
export type ErrorArea = keyof Tables;

type CodeOf<E> = E extends { readonly code: infer C } ? (C extends readonly (infer X)[] ? X : C) : never;

/** Every declared reason. */
export type ErrorReason = { [A in ErrorArea]: keyof Tables[A] & string }[ErrorArea];

/** The declared reasons sent with `code`. */
export type ReasonFor<C extends ErrorCode> = {
  [A in ErrorArea]: { [R in keyof Tables[A]]: C extends CodeOf<Tables[A][R]> ? R : never }[keyof Tables[A]];
}[ErrorArea] &
  string;

/** A declared reason with its area. */
export interface DeclaredReason extends ReasonEntry {
  readonly area: ErrorArea;
  readonly reason: ErrorReason;
  readonly codes: readonly ErrorCode[];
}

/** Every declared reason, area by area in the order of {@link errorReasons}. */
export function declaredReasons(): DeclaredReason[] {
  return Object.entries(errorReasons).flatMap(([area, table]) =>
    Object.entries(table as ReasonTable).map(([reason, entry]) => ({
      ...entry,
      area: area as ErrorArea,
      reason: reason as ErrorReason,
      codes: codesOf(entry),
    })),
  );
}

const declared = new Map<string, DeclaredReason>(declaredReasons().map((entry) => [entry.reason, entry]));

/** The declaration of `reason`, if it is a declared reason. */
export function reasonDeclaration(reason: string): DeclaredReason | undefined {
  return declared.get(reason);
}
