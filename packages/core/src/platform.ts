/**
 * `createPlatform`: the whole platform as a library. It holds the operations of every RPC and
 * runs each call through the same steps: find the operation, check the caller kind, validate
 * the request, check workspace access, run, and translate storage faults.
 *
 * @module
 */
import { create, type DescMessage, type DescMethodUnary, type MessageShape } from "@bufbuild/protobuf";
import { roleAllows } from "./access/permissions.js";
import { type AccessTokens, loadAccessTokens } from "./auth/access-tokens.js";
import { authenticate, type CredentialSource, type Credentials } from "./auth/authenticate.js";
import { createArgon2PasswordHasher, type PasswordHasher } from "./auth/passwords.js";
import { actorOf, type CallContext, type Caller, throwIfCancelled } from "./context.js";
import type { KeyStore } from "./crypto/key-store.js";
import {
  AlreadyExistsError,
  InvalidArgumentError,
  NotFoundError,
  PermissionDeniedError,
  PlatformError,
  UnauthenticatedError,
  UnavailableError,
  UnimplementedError,
} from "./errors.js";
import { presentFields } from "./lib/presence.js";
import type { AnyOperation, AuditEntry, OperationCall, WorkspaceScope } from "./operations/operation.js";
import { allOperations } from "./operations/registry.js";
import { defaultPlatformConfig, type PlatformConfig, type Services } from "./operations/services.js";
import { type Clock, type Random, systemClock, systemRandom } from "./runtime.js";
import {
  type Repositories,
  type Storage,
  StorageUnavailableError,
  UniqueViolationError,
} from "./storage/storage.js";
import { parseRequest } from "./validation/parse.js";

/** What `createPlatform` needs. Only `storage` and `keyStore` have no default. */
export interface PlatformOptions {
  readonly storage: Storage;
  /** Seals CA private keys and server secrets at rest. */
  readonly keyStore: KeyStore;
  readonly clock?: Clock;
  readonly random?: Random;
  readonly passwords?: PasswordHasher;
  readonly config?: Partial<PlatformConfig>;
}

/** The platform: every operation, callable without any transport. */
export interface Platform {
  /** The services operations run on (storage, clock, ...). */
  readonly services: Services;
  /** Operations by procedure path, e.g. `/platform.v1.WorkspaceService/CreateWorkspace`. */
  readonly operations: ReadonlyMap<string, AnyOperation>;
  /** Resolves the credentials of a request to a caller. */
  authenticate(credentials: Credentials): Promise<{ caller: Caller; source: CredentialSource }>;
  /** Runs one unary RPC. Throws only {@link PlatformError}s for conditions the caller can act on. */
  invoke<I extends DescMessage, O extends DescMessage>(
    method: DescMethodUnary<I, O>,
    ctx: CallContext,
    request: MessageShape<I>,
  ): Promise<MessageShape<O>>;
  close(): Promise<void>;
}

/**
 * Builds a platform over a storage backend.
 *
 * @example
 * ```ts
 * const platform = await createPlatform({ storage: await createSqliteStorage({ filename: ":memory:" }),
 *   keyStore: createMasterKeyStore({ masterKey: generateMasterKey() }) });
 * const res = await platform.invoke(WorkspaceService.method.listWorkspaces, ctx, create(ListWorkspacesRequestSchema));
 * ```
 */
export async function createPlatform(options: PlatformOptions): Promise<Platform> {
  const clock = options.clock ?? systemClock;
  const config: PlatformConfig = { ...defaultPlatformConfig, ...options.config };
  const accessTokens: AccessTokens = await loadAccessTokens({
    storage: options.storage,
    keyStore: options.keyStore,
    clock,
    ttlSeconds: config.accessTokenTtlSeconds,
  });
  const services: Services = {
    storage: options.storage,
    clock,
    random: options.random ?? systemRandom,
    keyStore: options.keyStore,
    accessTokens,
    passwords: options.passwords ?? createArgon2PasswordHasher(),
    config,
  };
  const operations = new Map<string, AnyOperation>();
  for (const operation of allOperations) operations.set(procedureOf(operation.method), operation);

  return {
    services,
    operations,
    authenticate: (credentials) => translateFaults(() => authenticate(services, credentials)),
    async invoke(method, ctx, request) {
      const operation = operations.get(procedureOf(method));
      if (!operation) {
        throw new UnimplementedError(
          `${method.parent.typeName}/${method.name} is not implemented by this server`,
        );
      }
      const result = await translateFaults(() => runOperation(services, operation, ctx, request));
      return create(method.output, result as never) as MessageShape<typeof method.output>;
    },
    close: () => options.storage.close(),
  };
}

/** `/package.Service/Method`, the Connect procedure path. */
export function procedureOf(method: { parent: { typeName: string }; name: string }): string {
  return `/${method.parent.typeName}/${method.name}`;
}

async function runOperation(services: Services, operation: AnyOperation, ctx: CallContext, request: unknown) {
  const { access } = operation;
  const caller = ctx.caller;
  if (access.kind !== "public") {
    const allowed =
      access.kind === "caller" ? access.callers : (access.callers ?? ["user", "service_account"]);
    if (caller.kind === "anonymous") {
      throw new UnauthenticatedError(
        "this call needs credentials: send 'Authorization: Bearer <token>' or the session cookie",
      );
    }
    if (!allowed.includes(caller.kind)) {
      throw new PermissionDeniedError(`a ${caller.kind.replace("_", " ")} may not call this operation`);
    }
  }
  const input = parseRequest(operation.input, presentFields(operation.method.input, request as never));
  const workspace =
    access.kind === "workspace"
      ? await authorizeWorkspace(services, caller, input, access.permission)
      : noWorkspace;
  throwIfCancelled(ctx);
  const now = services.clock.now();
  const call: OperationCall<unknown> = {
    ctx,
    input,
    services,
    now,
    workspace,
    audit: (tx, entry) => recordAudit(services, tx, ctx, now, workspace, entry),
  };
  return operation.run(call);
}

const noWorkspace: WorkspaceScope = Object.freeze({ workspaceId: "", role: null });

async function authorizeWorkspace(
  services: Services,
  caller: Caller,
  input: { workspaceId?: string },
  permission: Parameters<typeof roleAllows>[1],
): Promise<WorkspaceScope> {
  const own = caller.kind === "service_account" || caller.kind === "daemon" ? caller.workspaceId : undefined;
  const workspaceId = input.workspaceId ?? own;
  if (workspaceId === undefined) {
    throw new InvalidArgumentError("invalid request: workspaceId: is required", {
      violations: [{ field: "workspaceId", description: "is required" }],
    });
  }
  // One answer for "no such workspace" and "not yours", so ids of other tenants reveal nothing.
  const notFound = () =>
    new NotFoundError(`workspace ${workspaceId} not found`, { reason: "WORKSPACE_NOT_FOUND" });
  switch (caller.kind) {
    case "user": {
      const member = await services.storage.members.find(workspaceId, caller.userId);
      if (!member) throw notFound();
      if (!roleAllows(member.role, permission)) {
        throw new PermissionDeniedError(`the ${member.role} role may not do this (needs ${permission})`, {
          reason: "ROLE_LACKS_PERMISSION",
        });
      }
      return { workspaceId, role: member.role };
    }
    case "service_account": {
      if (caller.workspaceId !== workspaceId) throw notFound();
      if (!roleAllows(caller.role, permission)) {
        throw new PermissionDeniedError(
          `a service account with the ${caller.role} role may not do this (needs ${permission})`,
          {
            reason: "ROLE_LACKS_PERMISSION",
          },
        );
      }
      return { workspaceId, role: caller.role };
    }
    case "daemon": {
      if (caller.workspaceId !== workspaceId) throw notFound();
      return { workspaceId, role: null };
    }
    case "anonymous":
      throw new UnauthenticatedError("this call needs credentials");
  }
}

async function recordAudit(
  services: Services,
  tx: Repositories,
  ctx: CallContext,
  now: Date,
  workspace: WorkspaceScope,
  entry: AuditEntry,
): Promise<void> {
  const { actorId, actorType } = actorOf(ctx.caller);
  const workspaceId = entry.workspaceId ?? workspace.workspaceId;
  await tx.auditEvents.append({
    id: services.random.uuid(),
    workspaceId: workspaceId === "" ? null : workspaceId,
    actorId,
    actorType,
    action: entry.action,
    resource: entry.resource,
    ipAddress: ctx.ipAddress,
    userAgent: ctx.userAgent,
    statusCode: "ok",
    requestId: ctx.requestId,
    timestamp: now,
  });
}

/** Storage faults become errors the caller can act on; platform errors pass through. */
async function translateFaults<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof PlatformError) throw error;
    if (error instanceof StorageUnavailableError) {
      throw new UnavailableError("the database is unavailable; retry shortly", { cause: error });
    }
    if (error instanceof UniqueViolationError) {
      throw new AlreadyExistsError(
        `a resource with the same unique key already exists (${error.constraint})`,
        {
          cause: error,
        },
      );
    }
    throw error;
  }
}
