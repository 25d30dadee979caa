/**
 * Two platforms over one PostgreSQL schema, as two server instances would be, and plain calls
 * into them (protobuf-es messages are objects tagged with `$typeName`: this package does not
 * depend on @bufbuild/protobuf for `create`; only the fields given are set).
 */
import {
  type Caller,
  createArgon2PasswordHasher,
  createCallContext,
  createMasterKeyStore,
  createPlatform,
  generateMasterKey,
  isPlatformError,
  type Platform,
  type PlatformConfig,
} from "@wap/core";
import { createPostgresEventBus, createPostgresStorage } from "@wap/storage-postgres";
import { startTestPostgres } from "@wap/storage-postgres/testing";
import { afterAll, beforeAll } from "vitest";

export interface TwoInstances {
  readonly a: Platform;
  readonly b: Platform;
  /** The schema both use, for reading or changing rows behind their backs. */
  readonly connectionString: string;
}

/**
 * Starts two platforms sharing a fresh schema, one master key and the database's notifications
 * before the file's tests, and
 * closes them after; read `a` and `b` inside tests, once beforeAll has run.
 */
export function twoInstancesOverOnePostgres(config?: Partial<PlatformConfig>): TwoInstances {
  let instances: Omit<TwoInstances, "connectionString"> | undefined;
  let connectionString: string | undefined;
  let stop: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const pgServer = await startTestPostgres();
    stop = () => pgServer.stop();
    const url = await pgServer.freshSchema();
    connectionString = url;
    const keyStore = createMasterKeyStore({ masterKey: generateMasterKey() });
    // Each with its own LISTEN/NOTIFY bus, as each server instance has: what one decides wakes
    // what waits on the other.
    const instance = async () =>
      createPlatform({
        storage: await createPostgresStorage({ connectionString: url }),
        events: await createPostgresEventBus({ connectionString: url }),
        keyStore,
        passwords: createArgon2PasswordHasher({ memoryCost: 1024, timeCost: 1 }),
        ...(config && { config }),
      });
    instances = { a: await instance(), b: await instance() };
  }, 120_000);
  afterAll(async () => {
    await Promise.all([instances?.a.close(), instances?.b.close()]);
    await stop?.();
  }, 60_000);
  const started = () => {
    if (instances === undefined) throw new Error("the two instances start in beforeAll");
    return instances;
  };
  return {
    get a() {
      return started().a;
    },
    get b() {
      return started().b;
    },
    get connectionString() {
      started();
      return connectionString!;
    },
  };
}

type Unary = Platform["invoke"] extends (method: infer M, ...rest: never[]) => unknown ? M : never;

/** Calls a unary RPC on `platform` with only `fields` set. */
export const call = (platform: Platform, caller: Caller, method: Unary, fields: Record<string, unknown>) =>
  platform.invoke(method, createCallContext(caller), {
    $typeName: method.input.typeName,
    ...fields,
  } as never);

/** "ok", or the platform error code the promise rejects with. */
export const codeOf = (promise: Promise<unknown>): Promise<string> =>
  promise.then(
    () => "ok",
    (error: unknown) => (isPlatformError(error) ? error.code : `not a platform error: ${String(error)}`),
  );
