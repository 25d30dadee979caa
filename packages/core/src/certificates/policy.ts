/**
 * The rules a certificate authority's settings follow, beyond the per-field bounds of the
 * contract: defaults for what the creator leaves out, and consistency between fields.
 *
 * @module
 */
import { InvalidArgumentError } from "../errors.js";
import type { KeyAlgorithm } from "../storage/certificate-authorities.js";

/** Defaults for settings left out of CreateCertificateAuthority, in seconds. */
export const caDefaults = {
  /** Ten years: the longest the contract allows. Rollover replaces the key before then. */
  lifetimeSeconds: 315_360_000,
  /** A working day of access per user certificate; clients renew. */
  userDefaultTtlSeconds: 12 * 3600,
  userMaxTtlSeconds: 24 * 3600,
  /** Host certificates live long enough for daemons that renew weekly (> 7 days). */
  hostDefaultTtlSeconds: 30 * 24 * 3600,
  hostMaxTtlSeconds: 90 * 24 * 3600,
  allowedKeyTypes: ["ed25519", "ecdsa", "rsa"] as readonly KeyAlgorithm[],
  /** The permissions `ssh-keygen -s` grants by default. */
  userExtensions: {
    "permit-X11-forwarding": "",
    "permit-agent-forwarding": "",
    "permit-port-forwarding": "",
    "permit-pty": "",
    "permit-user-rc": "",
  } as Readonly<Record<string, string>>,
};

/** Critical options OpenSSH understands; it refuses certificates carrying any other. */
export const knownCriticalOptions = ["force-command", "source-address", "verify-required"] as const;

const optionName = /^[\x21-\x7e]{1,256}$/;

/** Checks extension and critical-option maps; throws invalid_argument naming the bad key. */
export function checkCertificateOptions(
  extensions: Readonly<Record<string, string>>,
  criticalOptions: Readonly<Record<string, string>>,
): void {
  const bad = (field: string, description: string) =>
    new InvalidArgumentError(`invalid request: ${field}: ${description}`, {
      violations: [{ field, description }],
    });
  for (const [name, value] of Object.entries(extensions)) {
    if (!optionName.test(name))
      throw bad(`userExtensions.${name}`, "names are 1 to 256 printable ASCII characters");
    if (value.length > 4096) throw bad(`userExtensions.${name}`, "values are at most 4096 characters");
  }
  for (const [name, value] of Object.entries(criticalOptions)) {
    if (!(knownCriticalOptions as readonly string[]).includes(name)) {
      throw bad(`userCriticalOptions.${name}`, `must be one of ${knownCriticalOptions.join(", ")}`);
    }
    if (value === "" && name !== "verify-required") throw bad(`userCriticalOptions.${name}`, "needs a value");
    if (value.length > 4096) throw bad(`userCriticalOptions.${name}`, "values are at most 4096 characters");
  }
}

/** A default TTL may not exceed the maximum it is bounded by. */
export function checkTtlOrder(settings: {
  userDefaultTtlSeconds: number;
  userMaxTtlSeconds: number;
  hostDefaultTtlSeconds: number;
  hostMaxTtlSeconds: number;
}): void {
  const pairs = [
    ["userDefaultTtl", settings.userDefaultTtlSeconds, "userMaxTtl", settings.userMaxTtlSeconds],
    ["hostDefaultTtl", settings.hostDefaultTtlSeconds, "hostMaxTtl", settings.hostMaxTtlSeconds],
  ] as const;
  for (const [defaultField, defaultValue, maxField, maxValue] of pairs) {
    if (defaultValue > maxValue) {
      const description = `must not exceed ${maxField} (${defaultValue}s > ${maxValue}s)`;
      throw new InvalidArgumentError(`invalid request: ${defaultField}: ${description}`, {
        violations: [{ field: defaultField, description }],
      });
    }
  }
}
