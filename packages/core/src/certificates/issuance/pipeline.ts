/**
 * Issuance as an ordered pipeline of typed options, the same shape for SSH and X.509 (after
 * smallstep's sign options). Authorisers return options, never certificates; the sign operations
 * run whatever options they got in one fixed order, then sign and record.
 *
 * Order: `key` (checks on the subject's public key) -> `template` (what the certificate says:
 * type, principals or names, options) -> `modifier` (backdating) -> `enforcer` (lifetime limits)
 * -> `name-policy` (names the caller may claim) -> `validator` (the draft as a whole).
 *
 * @module
 */

/** One step of issuance. `Key` is the parsed public key or CSR, `Draft` the certificate being built. */
export type SignOption<Key, Draft> =
  | { readonly kind: "key"; readonly name: string; check(key: Key): void }
  | { readonly kind: "template"; readonly name: string; apply(draft: Draft): void }
  | { readonly kind: "modifier"; readonly name: string; modify(draft: Draft): void }
  | { readonly kind: "enforcer"; readonly name: string; enforce(draft: Draft): void }
  | { readonly kind: "name-policy"; readonly name: string; check(draft: Draft): void }
  | { readonly kind: "validator"; readonly name: string; validate(draft: Draft): void };

export type SignOptionKind = SignOption<unknown, unknown>["kind"];

const order: readonly SignOptionKind[] = [
  "key",
  "template",
  "modifier",
  "enforcer",
  "name-policy",
  "validator",
];

/**
 * Runs `options` on `draft` in pipeline order (options of one kind in the order given) and
 * returns the draft. Any option may throw a PlatformError; nothing is signed then.
 */
export function applySignOptions<Key, Draft>(
  options: readonly SignOption<Key, Draft>[],
  key: Key,
  draft: Draft,
): Draft {
  for (const kind of order) {
    for (const option of options) {
      if (option.kind !== kind) continue;
      switch (option.kind) {
        case "key":
          option.check(key);
          break;
        case "template":
          option.apply(draft);
          break;
        case "modifier":
          option.modify(draft);
          break;
        case "enforcer":
          option.enforce(draft);
          break;
        case "name-policy":
          option.check(draft);
          break;
        case "validator":
          option.validate(draft);
          break;
      }
    }
  }
  return draft;
}
