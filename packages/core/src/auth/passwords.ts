import { hash, verify } from "@node-rs/argon2";

// `Algorithm.Argon2id` is an ambient const enum, which isolated modules cannot read.
const argon2id = 2;

/** Hashes and checks passwords. argon2id runs on the libuv thread pool, off the event loop. */
export interface PasswordHasher {
  hash(password: string): Promise<string>;
  verify(passwordHash: string, password: string): Promise<boolean>;
  /**
   * Spends the time of one verification without a stored hash, so that "no such account"
   * answers as slowly as "wrong password" and timing does not reveal which emails exist.
   */
  burn(password: string): Promise<void>;
}

/** argon2id with OWASP's recommended parameters (19 MiB, t=2, p=1). */
export function createArgon2PasswordHasher(
  options: { memoryCost?: number; timeCost?: number } = {},
): PasswordHasher {
  const params = {
    algorithm: argon2id,
    memoryCost: options.memoryCost ?? 19_456,
    timeCost: options.timeCost ?? 2,
    parallelism: 1,
  };
  let decoy: Promise<string> | undefined;
  return {
    hash: (password) => hash(password, params),
    verify: async (passwordHash, password) => {
      try {
        return await verify(passwordHash, password);
      } catch {
        return false;
      }
    },
    burn: async (password) => {
      decoy ??= hash("decoy-password-for-timing", params);
      await verify(await decoy, password).catch(() => false);
    },
  };
}
