/**
 * `createPlatform`: the whole platform as a library. It holds the operations of every RPC and
 * runs each call through the same steps: find the operation, check the caller kind, validate
 * the request, check workspace access, run, and translate storage faults. After a call whose
 * changes committed, it publishes one workspace event per audit entry on the event bus.
 *
 * @module
 */
import {
  create,
  type DescMessage,
  type DescMethodBiDiStreaming,
  type DescMethodServerStreaming,
  type DescMethodUnary,
  type MessageInitShape,
  type MessageShape,
} from "@bufbuild/protobuf";
import { roleAllows } from "../access/permissions.js";
import { lapsedGrantSweepMs, removeLapsedGrants } from "../access-requests/lapsed-grants.js";
import { accessRequestSweepMs, sweepAccessRequests } from "../access-requests/sweep.js";
import { auditRow } from "../audit/record.js";
import { recordSecurityEvent } from "../audit/security-events.js";
import { type AccessTokens, loadAccessTokens } from "../auth/access-tokens.js";
import { createArgon2PasswordHasher, type PasswordHasher } from "../auth/passwords.js";
import { loadServiceAccountTokens } from "../auth/service-account-tokens.js";
import { actorOf, type CallContext, type Caller, type CallerKind, throwIfCancelled } from "../context.js";
import type { KeyStore } from "../crypto/key-store.js";
import type { Pkcs11Token } from "../crypto/pkcs11/token.js";
import type { DaemonStreamHost, TerminalRelayHost } from "../daemons/stream-hosts.js";
import type { DnsTxtResolver } from "../domains/dns.js";
import {
  AlreadyExistsError,
  InvalidArgumentError,
  NotFoundError,
  PermissionDeniedError,
  PlatformError,
  UnauthenticatedError,
  UnavailableError,
  UnimplementedError,
} from "../errors.js";
import { currentCaller, stageAccountChange, subjectIdOf, watchAccess } from "../events/access-watch.js";
import type { AfterCommitEvents, StagedEvent } from "../events/after-commit.js";
import { createInProcessEventBus, type EventBus } from "../events/event-bus.js";
import type {
  AnyBidiStreamingOperation,
  AnyStreamingOperation,
  BidiStreamOptions,
  StreamingCall,
} from "../events/streaming-operation.js";
import { toEventPayload, workspaceTopic } from "../events/workspace-events.js";
import { presentFields } from "../lib/presence.js";
import { alreadyExistsMessage } from "../lib/unique-violation.js";
import type { Mailer } from "../mail/mailer.js";
import { type IntegrationServices, pickIntegrations } from "../operations/integrations.js";
import type {
  Access,
  AnyOperation,
  AuditEntry,
  OperationCall,
  WorkspaceScope,
} from "../operations/operation.js";
import type { PlatformConfig, PlatformObserver, Services } from "../operations/services.js";
import { type Clock, type Random, systemClock, systemRandom } from "../runtime.js";
import type { AuditEventRecord } from "../storage/audit.js";
import {
  type Repositories,
  type Storage,
  StorageUnavailableError,
  UniqueViolationError,
} from "../storage/storage.js";
import { parseRequest } from "../validation/parse.js";
import { uuid } from "../validation/rules.js";
import { startWebhookDelivery } from "../webhooks/delivery.js";
import { webhookSettings } from "../webhooks/options.js";
import { authenticate, type CredentialSource, type Credentials } from "./authenticate.js";
import { defaultPlatformConfig } from "./default-config.js";
import { createPlatformState } from "./platform-state.js";
import { allOperations, bidiStreamingOperations, streamingOperations } from "./registry.js";

/** What `createPlatform` needs. Only `storage` and `keyStore` have no default. */
export interface PlatformOptions extends IntegrationServices {
  readonly storage: Storage;
  /** Seals CA private keys and server secrets at rest. */
  readonly keyStore: KeyStore;
  /** The PKCS#11 token for authorities created with `keyStorage` pkcs11. Default: none (they are refused). */
  readonly pkcs11Token?: Pkcs11Token;
  readonly clock?: Clock;
  readonly random?: Random;
  readonly passwords?: PasswordHasher;
  readonly config?: Partial<PlatformConfig>;
  /**
   * The event bus shared by the server instances (PostgreSQL LISTEN/NOTIFY when there are
   * several). Default: a bus inside this process. `close()` closes it.
   */
  readonly events?: EventBus;
  /**
   * Told when publishing an event fails. The change itself has committed and its request
   * succeeds; only subscribers miss the notice. Default: ignore.
   */
  readonly onPublishError?: (error: unknown, topic: string) => void;
  /**
   * Told when a stream could not check again that its caller still has access (storage
   * unavailable), with the stream's request id. The stream goes on; the next change checks again.
   * Default: ignore.
   */
  readonly onStreamCheckError?: (error: unknown, requestId: string) => void;
  /** Sends account mails (verification, password reset). Default: none; flows still work. */
  readonly mailer?: Mailer;
  /** Looks up TXT records for domain verification. Default: the system resolver. */
  readonly dns?: DnsTxtResolver;
  /** Told of issuances and the like, for metrics. Default: none. */
  readonly observer?: PlatformObserver;
  /** The instance holding daemon control streams. Default: none (they are refused). */
  readonly daemonStreams?: DaemonStreamHost;
  /** The instance relaying terminal sessions. Default: none (daemon session streams are refused). */
  readonly terminalRelays?: TerminalRelayHost;
}

/** The resources of the server instance holding the daemon's streams (daemons/stream-hosts.ts). */
export interface StreamHosts {
  readonly daemonStreams?: DaemonStreamHost;
  readonly terminalRelays?: TerminalRelayHost;
}

/** The platform: every operation, callable without any transport. */
export interface Platform {
  /** The services operations run on (storage, clock, ...). */
  readonly services: Services;
  /** Operations by procedure path, e.g. `/platform.v1.WorkspaceService/CreateWorkspace`. */
  readonly operations: ReadonlyMap<string, AnyOperation>;
  /** Server-streaming operations by procedure path. */
  readonly streams: ReadonlyMap<string, AnyStreamingOperation>;
  /** Bidirectional streams (the daemon's) by procedure path. */
  readonly bidiStreams: ReadonlyMap<string, AnyBidiStreamingOperation>;
  /** Who may call the RPC at `procedure` (unary or streaming), or undefined when none is declared. */
  accessOf(procedure: string): Access | undefined;
  /** Resolves the credentials of a request to a caller. */
  authenticate(credentials: Credentials): Promise<{ caller: Caller; source: CredentialSource }>;
  /** Runs one unary RPC. Throws only {@link PlatformError}s for conditions the caller can act on. */
  invoke<I extends DescMessage, O extends DescMessage>(
    method: DescMethodUnary<I, O>,
    ctx: CallContext,
    request: MessageShape<I>,
  ): Promise<MessageShape<O>>;
  /**
   * Runs one server-streaming RPC. Access and validation are checked on the first read; the
   * stream ends when the operation is done or `ctx.signal` fires. Throws only
   * {@link PlatformError}s for conditions the caller can act on. `onReady` runs once the stream
   * is in effect (for event streams: later events will be delivered).
   */
  stream<I extends DescMessage, O extends DescMessage>(
    method: DescMethodServerStreaming<I, O>,
    ctx: CallContext,
    request: MessageShape<I>,
    options?: { readonly onReady?: () => void },
  ): AsyncIterable<MessageShape<O>>;
  /**
   * Opens one bidirectional RPC (the daemon's streams): admits the caller by the stream's declared
   * access, then resolves with the operation's messages, yielded as it reads `requests` until it
   * is done or `ctx.signal` (the client going away) ends it. A refusal rejects with its
   * {@link PlatformError}; what else ends the stream is for the transport to answer.
   */
  bidiStream<I extends DescMessage, O extends DescMessage>(
    method: DescMethodBiDiStreaming<I, O>,
    ctx: CallContext,
    requests: AsyncIterable<MessageShape<I>>,
    options?: BidiStreamOptions,
  ): Promise<AsyncIterable<MessageInitShape<O>>>;
  /**
   * This platform, with its bidirectional streams held by `hosts`: what a server instance
   * serving a platform built before it (or shared with other instances) gives it. Every other
   * call goes to this platform unchanged.
   */
  withStreamHosts(hosts: StreamHosts): Platform;
  /**
   * Resolves once the events of every call answered so far have been handed to the event bus
   * (they are published after the answer, so that a slow bus never delays a change). A bus in
   * this process has delivered them to its subscribers by then: what a test awaits before it
   * looks at what was, or was not, published.
   */
  drain(): Promise<void>;
  /** Waits for events still being published, then closes the event bus and the storage. */
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
  const serviceAccountTokens = await loadServiceAccountTokens({
    storage: options.storage,
    keyStore: options.keyStore,
    clock,
  });
  const services: Services = {
    storage: options.storage,
    clock,
    random: options.random ?? systemRandom,
    keyStore: options.keyStore,
    accessTokens,
    serviceAccountTokens,
    passwords: options.passwords ?? createArgon2PasswordHasher(),
    config,
    events: options.events ?? createInProcessEventBus(),
    ...pickIntegrations(options),
    ...(options.dns && { dns: options.dns }),
    ...(options.mailer && { mailer: options.mailer }),
    ...(options.pkcs11Token && { pkcs11Token: options.pkcs11Token }),
    ...(options.observer && { observer: options.observer }),
    ...(options.daemonStreams && { daemonStreams: options.daemonStreams }),
    ...(options.terminalRelays && { terminalRelays: options.terminalRelays }),
    state: createPlatformState(options.storage),
  };
  const operations = new Map<string, AnyOperation>();
  for (const operation of allOperations) operations.set(procedureOf(operation.method), operation);
  // Looked up on every call: by descriptor, without building the procedure string each time.
  const byMethod = new Map<object, AnyOperation>();
  for (const operation of allOperations) byMethod.set(operation.method, operation);
  const streams = new Map<string, AnyStreamingOperation>();
  for (const operation of streamingOperations) streams.set(procedureOf(operation.method), operation);
  const bidiStreams = new Map<string, AnyBidiStreamingOperation>();
  for (const operation of bidiStreamingOperations) bidiStreams.set(procedureOf(operation.method), operation);
  const publisher = createPublisher(services.events, options.onPublishError);
  const { onStreamCheckError } = options;
  // Best effort: a sweep that fails is retried at the next; lapsed grants let no one in meanwhile.
  const grantSweep = setInterval(() => void removeLapsedGrants(services).catch(() => {}), lapsedGrantSweepMs);
  grantSweep.unref();
  const requestSweep = setInterval(
    () => void sweepAccessRequests(services).catch(() => {}),
    accessRequestSweepMs,
  );
  requestSweep.unref();
  const webhooks = webhookSettings(options.webhooks);
  const webhookDelivery = webhooks.deliver ? startWebhookDelivery(services, webhooks) : undefined;

  function bidiStreamOver(services: Services): Platform["bidiStream"] {
    return async (method, ctx, requests, options = {}) => {
      const operation = bidiStreams.get(procedureOf(method));
      if (!operation) {
        throw notImplemented(method);
      }
      const prepared = await translateFaults(() =>
        prepareCall(services, operation, ctx, create(method.input)),
      );
      return operation.run({ ...prepared, requests, ...options }) as AsyncIterable<
        MessageInitShape<typeof method.output>
      >;
    };
  }

  return {
    services,
    operations,
    streams,
    bidiStreams,
    accessOf(procedure) {
      return (operations.get(procedure) ?? streams.get(procedure) ?? bidiStreams.get(procedure))?.access;
    },
    async authenticate(credentials) {
      try {
        return await authenticate(services, credentials);
      } catch (error) {
        throw translateFault(error);
      }
    },
    async invoke(method, ctx, request) {
      const operation = byMethod.get(method) ?? operations.get(procedureOf(method));
      if (!operation) {
        throw notImplemented(method);
      }
      const events = services.state.afterCommit.forCall();
      let result: unknown;
      try {
        result = await runOperation(services, operation, ctx, request, events);
      } catch (error) {
        const fault = translateFault(error);
        if (fault instanceof PlatformError && fault.code === "permission_denied") {
          await recordSecurityEvent(services, ctx, {
            kind: "permission_denied",
            resource: `rpc:${procedureOf(method)}`,
            workspaceId: await deniedCallWorkspace(services, ctx, request),
          });
        }
        throw fault;
      }
      const committed = events.committed();
      publisher.publish(committed);
      // A change was audited: its events are for the webhook endpoints now.
      if (committed.length > 0) webhookDelivery?.nudge();
      return create(method.output, result as never) as MessageShape<typeof method.output>;
    },
    async *stream(method, ctx, request, options = {}) {
      const operation = streams.get(procedureOf(method));
      if (!operation) {
        throw notImplemented(method);
      }
      // The stream runs until its client leaves or the access it was opened under ends.
      const revoked = new AbortController();
      const streamCtx: CallContext = { ...ctx, signal: AbortSignal.any([ctx.signal, revoked.signal]) };
      const prepared = await translateFaults(() => prepareCall(services, operation, streamCtx, request));
      let revocation: PlatformError | undefined;
      const subjectId = subjectIdOf(ctx.caller);
      const stopWatching =
        subjectId === ""
          ? () => {}
          : await watchAccess(services, {
              workspaceId: prepared.workspace.workspaceId,
              subjectId,
              recheck: async () => {
                const caller = await currentCaller(services, ctx.caller);
                await prepareCall(services, operation, { ...streamCtx, caller }, request);
              },
              onRevoked: (error) => {
                revocation = error;
                revoked.abort(error);
              },
              onCheckFailed: (error) => onStreamCheckError?.(error, ctx.requestId),
            });
      let readied = false;
      const ready = () => {
        if (readied) return;
        readied = true;
        options.onReady?.();
      };
      const messages = operation.run({ ...prepared, ready })[Symbol.asyncIterator]();
      try {
        for (;;) {
          const next = await translateFaults(() => messages.next());
          if (revocation) throw revocation;
          if (next.done) return;
          yield create(method.output, next.value as never) as MessageShape<typeof method.output>;
        }
      } finally {
        stopWatching();
        // The reader stopped early (client gone): let the operation release its subscription.
        await messages.return?.();
      }
    },
    bidiStream: bidiStreamOver(services),
    withStreamHosts(this: Platform, hosts) {
      const hosted: Services = { ...this.services, ...hosts };
      // Everything else is looked up on this platform (or the object standing in for it) at each call.
      return Object.create(this, {
        services: { value: hosted },
        bidiStream: { value: bidiStreamOver(hosted) },
      });
    },
    drain: () => publisher.drain(),
    async close() {
      clearInterval(grantSweep);
      clearInterval(requestSweep);
      await webhookDelivery?.close();
      await publisher.drain();
      try {
        await services.events.close();
      } finally {
        await options.storage.close();
      }
    },
  };
}

/**
 * Publishes the events of each call in order, without making the call wait: a slow or broken
 * bus must not fail or delay a change that has already committed.
 */
function createPublisher(bus: EventBus, onError: PlatformOptions["onPublishError"]) {
  const inFlight = new Set<Promise<void>>();
  return {
    publish(events: readonly StagedEvent[]) {
      if (events.length === 0) return;
      const sending = (async () => {
        for (const { topic, payload } of events) {
          try {
            await bus.publish(topic, payload);
          } catch (error) {
            onError?.(error, topic);
          }
        }
      })();
      inFlight.add(sending);
      void sending.finally(() => inFlight.delete(sending));
    },
    async drain() {
      await Promise.allSettled([...inFlight]);
    },
  };
}

function notImplemented(method: { parent: { typeName: string }; name: string }): UnimplementedError {
  return new UnimplementedError(`${method.parent.typeName}/${method.name} is not implemented by this server`);
}

/** `/package.Service/Method`, the Connect procedure path. */
export function procedureOf(method: { parent: { typeName: string }; name: string }): string {
  return `/${method.parent.typeName}/${method.name}`;
}

async function runOperation(
  services: Services,
  operation: AnyOperation,
  ctx: CallContext,
  request: unknown,
  events: AfterCommitEvents,
) {
  const prepared = await prepareCall(services, operation, ctx, request);
  // The operation's transactions go through `events.storage`, which knows which ones committed.
  const watched: Services = { ...services, storage: events.storage };
  const call: OperationCall<unknown> = {
    ...prepared,
    services: watched,
    audit: (tx, entry) => recordAudit(services, tx, ctx, prepared.now, prepared.workspace, entry, events),
    auditEvent(entry) {
      const record = auditRecordOf(services, ctx, prepared.now, prepared.workspace, entry);
      return {
        record,
        committed: () => stageAuditEvent(services, events, events.storage, record, entry, prepared.workspace),
      };
    },
  };
  return operation.run(call);
}

/**
 * The checks every call passes before its operation runs: caller kind, then workspace access
 * (membership and the role's permission), then the input. Access comes before the input, so a
 * caller outside the workspace hears `not_found` and nothing about what else is wrong with the
 * request; only a workspace id that is missing or not a UUID is reported by validation first.
 */
async function prepareCall(
  services: Services,
  operation: Pick<
    AnyOperation | AnyStreamingOperation | AnyBidiStreamingOperation,
    "access" | "input" | "method"
  >,
  ctx: CallContext,
  request: unknown,
): Promise<Omit<StreamingCall<unknown>, "ready">> {
  const { access } = operation;
  const caller = ctx.caller;
  if (access.kind === "signed_daemon") {
    if (caller.kind !== "daemon") throw daemonsOnly(caller, access.stream);
  } else if (access.kind !== "public") {
    const allowed = access.kind === "caller" ? access.callers : (access.callers ?? workspaceCallers);
    if (caller.kind === "anonymous") {
      throw new UnauthenticatedError(
        "this call needs credentials: send 'Authorization: Bearer <token>' or the session cookie",
      );
    }
    if (!allowed.includes(caller.kind)) {
      throw new PermissionDeniedError(`a ${caller.kind.replace("_", " ")} may not call this operation`);
    }
  }
  const fields = presentFields(operation.method.input, request as never);
  const admitted =
    access.kind === "workspace"
      ? await admitBeforeValidation(services, caller, fields, access.permission)
      : undefined;
  const input = parseRequest(operation.input, fields);
  const workspace =
    admitted ??
    (access.kind === "workspace"
      ? await authorizeWorkspace(services, caller, input, access.permission)
      : caller.kind === "daemon" && access.kind === "signed_daemon"
        ? { workspaceId: caller.workspaceId, role: null }
        : noWorkspace);
  throwIfCancelled(ctx);
  return { ctx, input, services, now: services.clock.now(), workspace };
}

/** Why a caller other than a daemon may not open the daemon's `stream`. */
function daemonsOnly(caller: Caller, stream: string): PlatformError {
  if (caller.kind === "anonymous") {
    return new UnauthenticatedError(
      `the ${stream} is for enrolled daemons: sign the request with the daemon's key (Authorization: Platform ...)`,
      { reason: "DAEMON_CREDENTIALS_REQUIRED" },
    );
  }
  return new PermissionDeniedError(`a ${caller.kind.replace("_", " ")} may not open a daemon ${stream}`, {
    reason: "DAEMONS_ONLY",
  });
}

/** Who may call a workspace operation that names no callers. */
const workspaceCallers: readonly CallerKind[] = Object.freeze(["user", "service_account"]);

const noWorkspace: WorkspaceScope = Object.freeze({ workspaceId: "", role: null });

/**
 * Workspace access checked on the request as sent, before its validation: when it names its
 * workspace by a well-formed id (or the caller's own workspace stands for it). Undefined when it
 * does not: validation then says what is wrong with the id, and access is checked after it.
 */
async function admitBeforeValidation(
  services: Services,
  caller: Caller,
  fields: Record<string, unknown>,
  permission: Parameters<typeof roleAllows>[1],
): Promise<WorkspaceScope | undefined> {
  const named = fields.workspaceId;
  if (named === undefined) {
    const own = caller.kind === "service_account" || caller.kind === "daemon";
    return own ? authorizeWorkspace(services, caller, {}, permission) : undefined;
  }
  const id = uuid.safeParse(named);
  return id.success ? authorizeWorkspace(services, caller, { workspaceId: id.data }, permission) : undefined;
}

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
  switch (caller.kind) {
    case "user": {
      const member = await services.storage.members.find(workspaceId, caller.userId);
      if (!member) throw workspaceNotFound(workspaceId);
      if (!roleAllows(member.role, permission)) {
        throw new PermissionDeniedError(`the ${member.role} role may not do this (needs ${permission})`, {
          reason: "ROLE_LACKS_PERMISSION",
        });
      }
      return { workspaceId, role: member.role };
    }
    case "service_account": {
      if (caller.workspaceId !== workspaceId) throw workspaceNotFound(workspaceId);
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
      if (caller.workspaceId !== workspaceId) throw workspaceNotFound(workspaceId);
      return { workspaceId, role: null };
    }
    case "anonymous":
      throw new UnauthenticatedError("this call needs credentials");
  }
}

/** One answer for "no such workspace" and "not yours", so ids of other tenants reveal nothing. */
function workspaceNotFound(workspaceId: string): NotFoundError {
  return new NotFoundError(`workspace ${workspaceId} not found`, { reason: "WORKSPACE_NOT_FOUND" });
}

async function recordAudit(
  services: Services,
  tx: Repositories,
  ctx: CallContext,
  now: Date,
  workspace: WorkspaceScope,
  entry: AuditEntry,
  events: AfterCommitEvents,
): Promise<void> {
  const record = auditRecordOf(services, ctx, now, workspace, entry);
  await tx.auditEvents.append(record);
  stageAuditEvent(services, events, tx, record, entry, workspace);
}

/** The audit row of `entry`: who did it, from where, in which request. */
function auditRecordOf(
  services: Services,
  ctx: CallContext,
  now: Date,
  workspace: WorkspaceScope,
  entry: AuditEntry,
): AuditEventRecord {
  const { actorId, actorType } = actorOf(ctx.caller);
  const workspaceId = entry.workspaceId ?? workspace.workspaceId;
  return auditRow(services, ctx, {
    workspaceId: workspaceId === "" ? null : workspaceId,
    actorId,
    actorType,
    action: entry.action,
    resource: entry.resource,
    at: now,
  });
}

/** The workspace event of an audit row written with `tx`, released when `tx` commits. */
function stageAuditEvent(
  services: Services,
  events: AfterCommitEvents,
  tx: Repositories,
  record: AuditEventRecord,
  entry: AuditEntry,
  workspace: WorkspaceScope,
): void {
  // A deleted workspace's audit row is kept outside it, but its subscribers still hear of it.
  const topicWorkspace = entry.workspaceId || workspace.workspaceId;
  if (topicWorkspace === "") {
    stageAccountChange(services, tx, record.actorId, entry.resource);
  } else {
    events.stage(tx, {
      topic: workspaceTopic(topicWorkspace),
      payload: toEventPayload({
        id: record.id,
        type: entry.action,
        resource: entry.resource,
        createdAt: record.timestamp.toISOString(),
      }),
    });
  }
}

/** Storage faults become errors the caller can act on; platform errors pass through. */
async function translateFaults<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw translateFault(error);
  }
}

function translateFault(error: unknown): unknown {
  if (error instanceof PlatformError) return error;
  if (error instanceof StorageUnavailableError) {
    return new UnavailableError("the database is unavailable; retry shortly", { cause: error });
  }
  if (error instanceof UniqueViolationError) {
    return new AlreadyExistsError(alreadyExistsMessage(error.constraint), { cause: error });
  }
  return error;
}

/**
 * The workspace whose log a denied call goes to: the one it named, when the caller belongs to it
 * (a member, or one of its service accounts or daemons). Others' attempts go to the account-wide
 * log, so no outsider can write into a workspace's log.
 */
async function deniedCallWorkspace(
  services: Services,
  ctx: CallContext,
  request: unknown,
): Promise<string | null> {
  const named = (request as { workspaceId?: unknown }).workspaceId;
  if (typeof named !== "string" || !uuid.safeParse(named).success) return null;
  const workspaceId = named.toLowerCase();
  const caller = ctx.caller;
  if (caller.kind === "user") {
    return (await services.storage.members.find(workspaceId, caller.userId).catch(() => null))
      ? workspaceId
      : null;
  }
  if (caller.kind === "service_account" || caller.kind === "daemon") {
    return caller.workspaceId === workspaceId ? workspaceId : null;
  }
  return null;
}
