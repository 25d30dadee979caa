/**
 * The CLI device login: StreamCLILogin's core ({@link startCliLogin}, {@link cliLoginStream}) and
 * VerifyCLILogin (AuthService).
 *
 * 1. The CLI opens the stream with its device id (header), key method and PEM P-256 public key.
 *    The server stores a pending login under a fresh 128-bit code and answers at once with a
 *    verification URL carrying the code (the client's own `loginCode` is ignored: a code the
 *    client picks could be one an attacker planted).
 * 2. A signed-in user opens the URL; the web app calls VerifyCLILogin with the code. In one
 *    transaction the pending login is approved (exactly once), a session is opened and the
 *    device id is bound to the key and the user, replacing any earlier binding of that id.
 * 3. The stream sees the approval and sends the user: woken by the event bus when there is one,
 *    and polling storage in any case, so approval may happen on any instance. From then on the
 *    device signs its requests (`devices/challenge.ts`).
 *
 * @module
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { UserSchema } from "@wap/api";
import { AuthService, type StreamCLILoginResponseSchema } from "@wap/api";
import * as z from "zod";
import { accountConfig, accountLink } from "../auth/account-config.js";
import { auditAccount } from "../auth/audit.js";
import { callerUser } from "../auth/caller-user.js";
import { toUserMessage } from "../auth/messages.js";
import { hashSecret } from "../auth/service-account-tokens.js";
import { type CallContext, throwIfCancelled } from "../context.js";
import { DeadlineExceededError, InvalidArgumentError } from "../errors.js";
import type { EventBus } from "../events/event-bus.js";
import { toHex } from "../lib/bytes.js";
import { defineOperation } from "../operations/operation.js";
import type { Services } from "../operations/services.js";
import { parseRequest } from "../validation/parse.js";
import { text, uuid } from "../validation/rules.js";
import { readP256PublicKey } from "./challenge.js";

/** A StreamCLILogin request, with the two headers the transport read. */
export interface CliLoginRequest {
  /** `StreamCLILoginRequest.authMethod`: "tpm" or "soft". */
  readonly authMethod?: string | undefined;
  /** `StreamCLILoginRequest.authPubkey`: PEM SPKI of the device's ECDSA P-256 key. */
  readonly authPubkey?: string | undefined;
  /** `StreamCLILoginRequest.loginCode`: ignored (the server makes the code). */
  readonly loginCode?: string | undefined;
  /** The `Platform-Client-Device-Id` header: the CLI's device id (a UUID). */
  readonly deviceId?: string | undefined;
  /** The `Platform-Client-Hostname` header, shown as the device's name; optional. */
  readonly deviceName?: string | undefined;
}

export interface CliLoginOptions {
  /** How often the pending login is checked for approval. Default 1000 ms. */
  readonly pollIntervalMs?: number;
}

/** A pending CLI login, registered and waiting for approval. */
export interface PendingCliLogin {
  /** The URL for the user to open; the first stream message. */
  readonly verificationUrl: string;
  readonly expiresAt: Date;
  /**
   * Waits until a signed-in user approves the login and resolves with them (the second stream
   * message). By then the device binding is stored. Rejects with `deadline_exceeded` when the
   * login expires unapproved or `ctx.signal` aborts; either way the pending login is removed.
   */
  waitForApproval(): Promise<MessageInitShape<typeof UserSchema>>;
}

const requestSchema = z.object({
  authMethod: z.enum(["tpm", "soft"], { message: "must be 'tpm' or 'soft'" }),
  authPubkey: text({ min: 1, max: 4096 }).refine((pem) => readP256PublicKey(pem) !== null, {
    message: "must be a PEM public key (SPKI) of an ECDSA P-256 key",
  }),
  deviceId: uuid,
  deviceName: text({ max: 255 }).optional(),
});

/** Waits `ms`, or less when `signal` aborts or `wake` fires. */
function pause(ms: number, signal: AbortSignal, wake: EventTarget): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      wake.removeEventListener("wake", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    wake.addEventListener("wake", done, { once: true });
  });
}

/** The event bus, when the platform has one (approval on any instance then wakes the stream at once). */
function eventBusOf(services: Services): EventBus | undefined {
  return (services as { readonly events?: EventBus }).events;
}

const approvalTopic = (loginId: string) => `cli-login:${loginId}`;

/**
 * Registers a pending CLI login and returns its verification URL and a way to wait for approval.
 * Throws `invalid_argument` for a missing or malformed method, key or device id.
 *
 * @example
 * ```ts
 * const pending = await startCliLogin(platform.services, ctx, { ...request, deviceId, deviceName });
 * yield { verificationUrl: pending.verificationUrl };
 * yield { user: await pending.waitForApproval() };
 * ```
 */
export async function startCliLogin(
  services: Services,
  ctx: CallContext,
  request: CliLoginRequest,
  options: CliLoginOptions = {},
): Promise<PendingCliLogin> {
  const input = parseRequest(requestSchema, {
    authMethod: request.authMethod,
    authPubkey: request.authPubkey,
    deviceId: request.deviceId,
    // A header, not a contract field: trimmed to fit rather than refused.
    ...(request.deviceName
      ? { deviceName: [...request.deviceName.replaceAll("\u0000", "")].slice(0, 255).join("") }
      : {}),
  });
  const config = accountConfig(services);
  const now = services.clock.now();
  const code = toHex(services.random.bytes(16));
  const id = services.random.uuid();
  const expiresAt = new Date(now.getTime() + config.cliLoginTtlSeconds * 1000);
  await services.storage.transaction(async (tx) => {
    await tx.cliLogins.deleteExpired(now);
    await tx.cliLogins.insert({
      id,
      codeHash: hashSecret(code),
      deviceId: input.deviceId,
      deviceName: input.deviceName || "cli",
      authMethod: input.authMethod,
      publicKey: input.authPubkey,
      ipAddress: ctx.ipAddress,
      userAgent: ctx.userAgent,
      createdAt: now,
      expiresAt,
      approvedBy: null,
      approvedAt: null,
    });
  });
  const pollMs = options.pollIntervalMs ?? 1000;
  return {
    verificationUrl: accountLink(config, "/cli-login", { code }),
    expiresAt,
    async waitForApproval() {
      // Polling alone is correct across instances; the bus only makes the answer immediate.
      const wake = new EventTarget();
      const unsubscribe = await eventBusOf(services)
        ?.subscribe(approvalTopic(id), () => wake.dispatchEvent(new Event("wake")))
        .catch(() => undefined);
      try {
        for (;;) {
          const login = await services.storage.cliLogins.findById(id);
          if (login?.approvedBy) {
            const user = await services.storage.users.findById(login.approvedBy);
            if (user) return toUserMessage(user);
          }
          if (!login || services.clock.now() >= expiresAt) {
            throw new DeadlineExceededError("the CLI login was not approved in time; run the login again", {
              reason: "CLI_LOGIN_EXPIRED",
            });
          }
          throwIfCancelled(ctx);
          await pause(pollMs, ctx.signal, wake);
        }
      } finally {
        unsubscribe?.();
        await services.storage.cliLogins.delete(id).catch(() => undefined);
      }
    },
  };
}

/**
 * StreamCLILogin as an async generator of response messages: the verification URL at once, then
 * the user after approval. A Connect server-streaming handler can `yield*` it.
 */
export async function* cliLoginStream(
  services: Services,
  ctx: CallContext,
  request: CliLoginRequest,
  options: CliLoginOptions = {},
): AsyncGenerator<MessageInitShape<typeof StreamCLILoginResponseSchema>> {
  const pending = await startCliLogin(services, ctx, request, options);
  yield { verificationUrl: pending.verificationUrl };
  yield { user: await pending.waitForApproval() };
}

export const verifyCliLogin = defineOperation({
  method: AuthService.method.verifyCLILogin,
  access: { kind: "caller", callers: ["user"] },
  input: z.object({ loginCode: text({ min: 1 }) }),
  async run({ input, services, ctx, now }) {
    // One answer for unknown, expired and already approved codes.
    const invalid = () =>
      new InvalidArgumentError("invalid request: loginCode: is invalid or has expired", {
        reason: "INVALID_LOGIN_CODE",
        violations: [{ field: "loginCode", description: "is invalid or has expired" }],
      });
    const { loginCode } = input;
    const user = await callerUser(services, ctx);
    const config = accountConfig(services);
    const approved = await services.storage.transaction(async (tx) => {
      const login = await tx.cliLogins.approve(hashSecret(loginCode), user.id, now);
      if (login === null) return null;
      const sessionId = services.random.uuid();
      const expiresAt = new Date(now.getTime() + config.deviceSessionTtlSeconds * 1000);
      await tx.authSessions.insert({
        id: sessionId,
        userId: user.id,
        createdAt: now,
        expiresAt,
        revokedAt: null,
        ipAddress: login.ipAddress,
        userAgent: login.userAgent,
      });
      // A device id logs in again (new key, other user): the old binding and its session end.
      const previous = await tx.userDevices.deleteById(login.deviceId);
      if (previous) await tx.authSessions.revoke(previous.sessionId, now);
      await tx.userDevices.insert({
        id: login.deviceId,
        userId: user.id,
        sessionId,
        name: login.deviceName,
        authMethod: login.authMethod,
        publicKey: login.publicKey,
        createdAt: now,
        expiresAt,
        lastUsedAt: null,
      });
      await auditAccount(tx, services, ctx, {
        userId: user.id,
        action: "user.device.login",
        resource: `device:${login.deviceId}`,
        at: now,
      });
      return login;
    });
    if (approved === null) throw invalid();
    // After the commit, so the woken stream finds the approval. Polling covers a lost notice.
    await eventBusOf(services)
      ?.publish(approvalTopic(approved.id), null)
      .catch(() => undefined);
    return {};
  },
});
