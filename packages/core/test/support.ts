/**
 * A platform over a real in-memory SQLite database, and helpers to call it as a given caller.
 */
import {
  create,
  type DescMessage,
  type DescMethodUnary,
  type MessageInitShape,
  type MessageShape,
} from "@bufbuild/protobuf";
import { AuthService, WorkspaceService } from "@wap/api";
import { createSqliteStorage } from "@wap/storage-sqlite";
import { expect } from "vitest";
import { createArgon2PasswordHasher } from "../src/auth/passwords.js";
import { type Caller, createCallContext } from "../src/context.js";
import { createMasterKeyStore, generateMasterKey } from "../src/crypto/key-store.js";
import { PlatformError } from "../src/errors.js";
import { createPlatform, type Platform, type PlatformOptions } from "../src/platform/platform.js";
import { createManualClock } from "../src/runtime.js";

export async function createTestPlatform(options: Partial<PlatformOptions> = {}) {
  const storage =
    options.storage ?? (await createSqliteStorage({ filename: ":memory:", strictTransactions: true }));
  const clock = createManualClock(new Date("2026-11-21T12:00:00Z"));
  const platform = await createPlatform({
    storage,
    keyStore: createMasterKeyStore({ masterKey: generateMasterKey() }),
    clock,
    passwords: createArgon2PasswordHasher({ memoryCost: 1024, timeCost: 1 }),
    ...options,
  });
  return { platform, storage, clock, ...callers(platform) };
}

export type TestPlatform = Awaited<ReturnType<typeof createTestPlatform>>;

function callers(platform: Platform) {
  const call = <I extends DescMessage, O extends DescMessage>(
    caller: Caller,
    method: DescMethodUnary<I, O>,
    request: MessageInitShape<I>,
  ): Promise<MessageShape<O>> =>
    platform.invoke(method, createCallContext(caller), create(method.input, request));

  let counter = 0;
  /**
   * Registers and signs in a new user; returns its caller and tokens. The address counts as
   * verified (as if the mailed link had been followed) unless `verified` is false.
   */
  const signUp = async (name = `user${++counter}`, options: { verified?: boolean } = {}) => {
    const email = `${name}@example.com`;
    await call({ kind: "anonymous" }, AuthService.method.register, {
      name: `${name} Test`,
      email,
      username: name,
      password: "correct horse battery",
    });
    const tokens = await call({ kind: "anonymous" }, AuthService.method.login, {
      email,
      password: "correct horse battery",
    });
    const { caller } = await platform.authenticate({ bearer: tokens.accessToken });
    if (caller.kind !== "user") throw new Error("login did not yield a user");
    if (options.verified ?? true) {
      await platform.services.storage.users.update(caller.userId, { emailVerified: true }, new Date());
    }
    return { caller, tokens, email };
  };
  /** A new user with a new workspace they own. */
  const owner = async () => {
    const user = await signUp();
    const { workspace } = await call(user.caller, WorkspaceService.method.createWorkspace, {
      name: `ws of ${user.email}`,
    });
    return { ...user, workspaceId: workspace!.id };
  };
  return { call, signUp, owner };
}

/** Asserts that `promise` fails with a PlatformError of `code` and returns it. */
export async function expectCode(
  promise: Promise<unknown>,
  code: PlatformError["code"],
): Promise<PlatformError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, `expected a ${code} error`).toBeInstanceOf(PlatformError);
  expect((error as PlatformError).code).toBe(code);
  return error as PlatformError;
}
