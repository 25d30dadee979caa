/**
 * Offline licences: a plan and an expiry, signed with Ed25519 by whoever sells the licence. The
 * format is documented in docs/licence.md. Nothing here reaches the network, and nothing here
 * throws on a bad licence: it is reported (`invalid`, `expired`) so a server always starts.
 *
 * @module
 */
import { createPrivateKey, createPublicKey, type KeyObject, sign, verify } from "node:crypto";
import { decodeBase64Url, encodeBase64Url } from "../lib/base64.js";
import { fromUtf8, utf8 } from "../lib/bytes.js";

/** The prefix of every licence token; the version of the format. */
export const licensePrefix = "wap-license-v1";

/** How a platform learns its licence. */
export interface LicenseOptions {
  /** The content of the licence file; absent or blank means no licence (the free plan). */
  readonly license?: string;
  /** Ed25519 public keys (PEM SPKI) whose signatures are trusted. */
  readonly publicKeys?: readonly string[];
}

/** What a licence says once its signature checked out. */
export interface LicensePayload {
  /** Identifies the licence (for support and revocation lists). */
  readonly id: string;
  /** Who it was sold to. */
  readonly licensee: string;
  /** e.g. "team", "enterprise": lower-case letters, digits, '-' and '_'. */
  readonly plan: string;
  readonly issuedAt: Date;
  readonly expiresAt: Date;
}

/** The state of the instance's licence. */
export type LicenseStatus =
  /** No licence: the free self-hosted plan, which never expires. */
  | { readonly state: "none"; readonly plan: "free"; readonly active: true }
  | {
      readonly state: "valid";
      readonly plan: string;
      readonly active: true;
      readonly license: LicensePayload;
    }
  | {
      readonly state: "expired";
      readonly plan: string;
      readonly active: false;
      readonly license: LicensePayload;
    }
  /** Unreadable, badly signed, signed by an unknown key, or not valid yet: `reason` says which. */
  | { readonly state: "invalid"; readonly plan: "invalid"; readonly active: false; readonly reason: string };

/** The plan an instance without a licence runs on. */
export const freePlan = "free";

const planPattern = /^[a-z0-9][a-z0-9_-]{0,63}$/;
/** Licences issued a little in the future (the issuer's clock runs ahead) are still accepted. */
const issueSkewMs = 5 * 60_000;

/** The licence token inside a licence file: the first line that is neither blank nor a `#` comment. */
function tokenOf(file: string): string | undefined {
  for (const line of file.split(/\r?\n/)) {
    const trimmed = line.trim();
    if (trimmed !== "" && !trimmed.startsWith("#")) return trimmed;
  }
  return undefined;
}

function parsePayload(json: unknown): LicensePayload | string {
  if (typeof json !== "object" || json === null || Array.isArray(json))
    return "the payload is not a JSON object";
  const p = json as Record<string, unknown>;
  const text = (key: string) => (typeof p[key] === "string" ? (p[key] as string) : undefined);
  const id = text("id");
  const licensee = text("licensee");
  const plan = text("plan");
  const issuedAt = text("issuedAt");
  const expiresAt = text("expiresAt");
  if (id === undefined || licensee === undefined || plan === undefined) {
    return "the payload lacks id, licensee or plan";
  }
  if (!planPattern.test(plan)) return `the plan '${plan}' is not a plan name`;
  const issued = issuedAt === undefined ? Number.NaN : Date.parse(issuedAt);
  const expires = expiresAt === undefined ? Number.NaN : Date.parse(expiresAt);
  if (Number.isNaN(issued) || Number.isNaN(expires)) return "issuedAt and expiresAt must be RFC 3339 times";
  if (expires <= issued) return "the licence expires before it was issued";
  return { id, licensee, plan, issuedAt: new Date(issued), expiresAt: new Date(expires) };
}

function publicKeysOf(pems: readonly string[]): KeyObject[] {
  const keys: KeyObject[] = [];
  for (const pem of pems) {
    try {
      const key = createPublicKey(pem);
      if (key.asymmetricKeyType === "ed25519") keys.push(key);
    } catch {
      // An unreadable configured key trusts nothing; the licence then reads as invalid.
    }
  }
  return keys;
}

/**
 * Reads a licence file and checks it against the trusted keys at `now`. Never throws.
 *
 * @example
 * ```ts
 * const status = inspectLicense({ license: await readFile("wap.license", "utf8"), publicKeys: [pem] }, new Date());
 * if (status.state === "invalid") log.warn(`licence ignored: ${status.reason}`);
 * ```
 */
export function inspectLicense(options: LicenseOptions, now: Date): LicenseStatus {
  const token = tokenOf(options.license ?? "");
  if (token === undefined) return { state: "none", plan: freePlan, active: true };
  const invalid = (reason: string): LicenseStatus => ({
    state: "invalid",
    plan: "invalid",
    active: false,
    reason,
  });

  const parts = token.split(".");
  if (parts.length !== 3 || parts[0] !== licensePrefix) {
    return invalid(`not a licence: expected '${licensePrefix}.<payload>.<signature>'`);
  }
  const payloadBytes = decodeBase64Url(parts[1]!);
  const signature = decodeBase64Url(parts[2]!);
  if (payloadBytes === undefined || signature === undefined) return invalid("the licence is not base64url");
  const keys = publicKeysOf(options.publicKeys ?? []);
  if (keys.length === 0) return invalid("no Ed25519 licence verification key is configured");
  const signed = utf8(`${parts[0]}.${parts[1]}`);
  if (!keys.some((key) => verify(null, signed, key, signature))) {
    return invalid("the signature does not match any trusted licence key");
  }
  let json: unknown;
  try {
    json = JSON.parse(fromUtf8(payloadBytes));
  } catch {
    return invalid("the payload is not UTF-8 JSON");
  }
  const payload = parsePayload(json);
  if (typeof payload === "string") return invalid(payload);
  if (payload.issuedAt.getTime() > now.getTime() + issueSkewMs) {
    return invalid(`the licence is not valid before ${payload.issuedAt.toISOString()}`);
  }
  if (now.getTime() >= payload.expiresAt.getTime()) {
    return { state: "expired", plan: payload.plan, active: false, license: payload };
  }
  return { state: "valid", plan: payload.plan, active: true, license: payload };
}

/**
 * Signs a licence: what the seller's tooling runs (and tests). `privateKey` is an Ed25519 key,
 * PEM PKCS#8 or a KeyObject. Returns the token, the whole content of a licence file.
 */
export function signLicense(
  payload: Omit<LicensePayload, "issuedAt" | "expiresAt"> & { issuedAt: Date; expiresAt: Date },
  privateKey: KeyObject | string,
): string {
  const key = typeof privateKey === "string" ? createPrivateKey(privateKey) : privateKey;
  const body = encodeBase64Url(
    utf8(
      JSON.stringify({
        id: payload.id,
        licensee: payload.licensee,
        plan: payload.plan,
        issuedAt: payload.issuedAt.toISOString(),
        expiresAt: payload.expiresAt.toISOString(),
      }),
    ),
  );
  const signature = sign(null, utf8(`${licensePrefix}.${body}`), key);
  return `${licensePrefix}.${body}.${encodeBase64Url(signature)}`;
}
