/**
 * The CLI device login: StreamCLILogin's core ({@link startCliLogin}, {@link cliLoginStream}),
 * GetCLILogin and VerifyCLILogin (AuthService). See the README's "CLI login" section.
 *
 * 1. The CLI opens the stream with its device id (header), key method and PEM P-256 public key.
 *    The server stores a pending login under a fresh 128-bit login code and a short user code,
 *    and answers at once with a verification URL carrying the login code and the user code, which
 *    the CLI shows. At most `cliLoginMaxPendingPerAddress` logins wait per client address.
 * 2. A signed-in user opens the URL; the page shows what GetCLILogin says of the login (device
 *    name, OS, client address, version, times) and asks for the user code the CLI shows. With it,
 *    VerifyCLILogin approves the login (exactly once): a session is opened and the device id is
 *    bound to the key and the user. Or it refuses it (`deny`). A few wrong user codes refuse it
 *    too. A device id bound to one user is never bound to another.
 * 3. The stream is woken by the event bus (which crosses instances) and sends the user, or ends
 *    with `permission_denied` when the login was refused. It never polls storage: it reads the
 *    login when woken and once more when the login expires. From then on the device signs its
 *    requests (`devices/challenge.ts`).
 *
 * @module
 */
import { timingSafeEqual } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { UserSchema } from "@wap/api";
import { AuthService, type StreamCLILoginResponseSchema } from "@wap/api";
import * as z from "zod";
import type { AuditAction } from "../audit/actions.js";
import { accountConfig, accountLink } from "../auth/account-config.js";
import { auditAccount } from "../auth/audit.js";
import { callerUser } from "../auth/caller-user.js";
import { toUserMessage } from "../auth/messages.js";
import { hashSecret } from "../auth/service-account-tokens.js";
import { insertAuthSession } from "../auth/sessions.js";
import { type CallContext, throwIfCancelled } from "../context.js";
import {
  DeadlineExceededError,
  InvalidArgumentError,
  PermissionDeniedError,
  ResourceExhaustedError,
} from "../errors.js";
import { defineStreamingOperation } from "../events/streaming-operation.js";
import { toHex } from "../lib/bytes.js";
import { defineOperation } from "../operations/operation.js";
import type { Services } from "../operations/services.js";
import type { Random } from "../runtime.js";
import type { CliLoginRecord } from "../storage/devices.js";
import { parseRequest } from "../validation/parse.js";
import { controlCharacters, text, uuid } from "../validation/rules.js";
import { readP256PublicKey } from "./challenge.js";

/** A StreamCLILogin request, with the headers the transport read. */
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
  /** The `Platform-Client-OS` header, e.g. "linux/x64"; optional. */
  readonly clientOs?: string | undefined;
  /** The `Platform-Client-Version` header; optional. */
  readonly clientVersion?: string | undefined;
}

/** A pending CLI login, registered and waiting for approval. */
export interface PendingCliLogin {
  /** The URL for the user to open; sent in the first stream message. */
  readonly verificationUrl: string;
  /** The code the CLI shows, e.g. `BCDF-GHJK`; sent with the URL. */
  readonly userCode: string;
  readonly expiresAt: Date;
  /**
   * Waits until a signed-in user approves the login and resolves with them (the second stream
   * message). By then the device binding is stored. Rejects with `permission_denied` when the
   * login is refused, `deadline_exceeded` when it expires undecided or `ctx.signal` aborts;
   * either way the pending login is removed.
   */
  waitForApproval(): Promise<MessageInitShape<typeof UserSchema>>;
}

const requestSchema = z.object({
  authMethod: z.enum(["tpm", "soft"], { message: "must be 'tpm' or 'soft'" }),
  authPubkey: text({ min: 1, max: 4096, controlCharacters: "allowed" }).refine(
    (pem) => readP256PublicKey(pem) !== null,
    {
      message: "must be a PEM public key (SPKI) of an ECDSA P-256 key",
    },
  ),
  deviceId: uuid,
});

/** Wrong user codes that cancel a pending login. */
export const maxUserCodeFailures = 3;
/**
 * The user code's alphabet: consonants only (no vowels, so no words; no I, L, O or U to misread as
 * digits or each other). 20 letters, 8 of them: about 34.6 bits.
 */
const userCodeAlphabet = "BCDFGHJKMNPQRSTVWXYZ";
const userCodeLength = 8;

/** A new user code, e.g. `BCDF-GHJK`: uniform over the alphabet (bytes past 240 are drawn again). */
export function mintUserCode(random: Random): string {
  let code = "";
  while (code.length < userCodeLength) {
    for (const byte of random.bytes(userCodeLength)) {
      if (byte < 240 && code.length < userCodeLength) code += userCodeAlphabet[byte % 20];
    }
  }
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

/** The canonical form of a typed user code: case, hyphens and spaces ignored. */
export function normalizeUserCode(code: string): string {
  return code.toUpperCase().replace(/[\s-]/g, "");
}

/**
 * How the user code is kept: hashed together with the 128-bit login code, so the short code alone
 * cannot be recovered from the table by trying every value.
 */
function userCodeHash(loginCode: string, userCode: string): string {
  return hashSecret(`${loginCode}:${normalizeUserCode(userCode)}`);
}

function userCodeMatches(loginCode: string, userCode: string, stored: string): boolean {
  const presented = Buffer.from(userCodeHash(loginCode, userCode), "hex");
  const expected = Buffer.from(stored, "hex");
  return presented.length === expected.length && timingSafeEqual(presented, expected);
}

/** A header value as the login keeps it: without NUL, at most `max` characters (cut, not refused). */
function headerValue(value: string | undefined, max: number): string {
  // The device's name is shown in lists and terminals: no control characters.
  return [...(value ?? "").replace(new RegExp(controlCharacters.source, "gu"), "")].slice(0, max).join("");
}

const loginTopic = (loginId: string) => `cli-login:${loginId}`;

/** Why a refused login was refused, as the CLI's stream ends. */
function refusal(login: CliLoginRecord): PermissionDeniedError {
  return login.codeFailures >= maxUserCodeFailures
    ? new PermissionDeniedError(
        "the CLI login was cancelled: a wrong code was entered too often in the browser; run the login again",
        { reason: "CLI_LOGIN_CANCELLED" },
      )
    : new PermissionDeniedError("the CLI login was denied in the browser", { reason: "CLI_LOGIN_DENIED" });
}

/**
 * Wake-ups for one waiting login. One that arrives while nobody waits (the decision landing
 * between a read and the next wait) is kept, so the next wait returns at once instead of sleeping
 * until the login expires.
 */
class Wakeups {
  private pending = false;
  private waiter: (() => void) | undefined;

  wake(): void {
    if (this.waiter) this.waiter();
    else this.pending = true;
  }

  /** Until a wake-up (possibly one already kept), `until`, or the signal's abort. */
  wait(until: Date, now: Date, signal: AbortSignal): Promise<void> {
    if (this.pending || signal.aborted) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        this.waiter = undefined;
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, until.getTime() - now.getTime()));
      signal.addEventListener("abort", done, { once: true });
      this.waiter = done;
    });
  }
}

/**
 * Registers a pending CLI login and returns its verification URL, its user code and a way to wait
 * for the decision. Throws `invalid_argument` for a missing or malformed method, key or device
 * id, and `resource_exhausted` when the client address has too many logins pending.
 *
 * @example
 * ```ts
 * const pending = await startCliLogin(platform.services, ctx, { ...request, deviceId, deviceName });
 * yield { verificationUrl: pending.verificationUrl, userCode: pending.userCode };
 * yield { user: await pending.waitForApproval() };
 * ```
 */
export async function startCliLogin(
  services: Services,
  ctx: CallContext,
  request: CliLoginRequest,
): Promise<PendingCliLogin> {
  const input = parseRequest(requestSchema, {
    authMethod: request.authMethod,
    authPubkey: request.authPubkey,
    deviceId: request.deviceId,
  });
  const config = accountConfig(services);
  const now = services.clock.now();
  const code = toHex(services.random.bytes(16));
  const userCode = mintUserCode(services.random);
  const id = services.random.uuid();
  const expiresAt = new Date(now.getTime() + config.cliLoginTtlSeconds * 1000);
  await services.storage.transaction(async (tx) => {
    await tx.cliLogins.deleteExpired(now);
    const pending = await tx.cliLogins.countPendingFrom(ctx.ipAddress, now);
    if (pending >= config.cliLoginMaxPendingPerAddress) {
      throw new ResourceExhaustedError(
        `at most ${config.cliLoginMaxPendingPerAddress} CLI logins may wait for approval per client address ` +
          `(cliLoginMaxPendingPerAddress, WAP_CLI_LOGIN_MAX_PENDING_PER_ADDRESS); finish or cancel one first`,
        { reason: "CLI_LOGIN_LIMIT" },
      );
    }
    await tx.cliLogins.insert({
      id,
      codeHash: hashSecret(code),
      userCodeHash: userCodeHash(code, userCode),
      codeFailures: 0,
      deviceId: input.deviceId,
      // Headers, not contract fields: cut to fit rather than refused.
      deviceName: headerValue(request.deviceName, 255) || "cli",
      clientOs: headerValue(request.clientOs, 64),
      clientVersion: headerValue(request.clientVersion, 64),
      authMethod: input.authMethod,
      publicKey: input.authPubkey,
      ipAddress: ctx.ipAddress,
      userAgent: ctx.userAgent,
      createdAt: now,
      expiresAt,
      approvedBy: null,
      approvedAt: null,
      deniedAt: null,
    });
  });
  return {
    verificationUrl: accountLink(config, "/cli-login", { code }),
    userCode,
    expiresAt,
    async waitForApproval() {
      // Subscribed before the first read, so a decision after that read always wakes us.
      const wakeups = new Wakeups();
      const unsubscribe = await services.events
        .subscribe(loginTopic(id), () => wakeups.wake())
        .catch(() => undefined);
      try {
        for (;;) {
          const login = await services.storage.cliLogins.findById(id);
          if (login?.approvedBy) {
            const user = await services.storage.users.findById(login.approvedBy);
            if (user) return toUserMessage(user);
          }
          if (login?.deniedAt) throw refusal(login);
          if (!login || services.clock.now() >= expiresAt) {
            throw new DeadlineExceededError("the CLI login was not approved in time; run the login again", {
              reason: "CLI_LOGIN_EXPIRED",
            });
          }
          throwIfCancelled(ctx);
          // No polling: the decision's event wakes us; the expiry makes the last read.
          await wakeups.wait(expiresAt, services.clock.now(), ctx.signal);
        }
      } finally {
        unsubscribe?.();
        await services.storage.cliLogins.delete(id).catch(() => undefined);
      }
    },
  };
}

/**
 * StreamCLILogin as an async generator of response messages: the verification URL and user code
 * at once, then the user after approval. A Connect server-streaming handler can `yield*` it.
 */
export async function* cliLoginStream(
  services: Services,
  ctx: CallContext,
  request: CliLoginRequest,
): AsyncGenerator<MessageInitShape<typeof StreamCLILoginResponseSchema>> {
  const pending = await startCliLogin(services, ctx, request);
  yield { verificationUrl: pending.verificationUrl, userCode: pending.userCode };
  yield { user: await pending.waitForApproval() };
}

/**
 * AuthService.StreamCLILogin as a streaming operation. Anyone may open it; the `Platform`
 * challenge the CLI sends is not checked, as its key is not registered yet. The device id, its
 * name, OS and client version come from the `Platform-Client-*` headers (`ctx.headers`).
 */
export const streamCliLogin = defineStreamingOperation({
  method: AuthService.method.streamCLILogin,
  access: { kind: "public", signature: "unchecked" },
  // Checked in full when the login starts, together with the device id of the headers.
  input: z.object({ authMethod: z.string().optional(), authPubkey: z.string().optional() }),
  run({ services, ctx, input }) {
    return cliLoginStream(services, ctx, {
      ...input,
      deviceId: ctx.headers?.["platform-client-device-id"],
      deviceName: ctx.headers?.["platform-client-hostname"],
      clientOs: ctx.headers?.["platform-client-os"],
      clientVersion: ctx.headers?.["platform-client-version"],
    });
  },
});

/** The request headers StreamCLILogin reads (names in lower case). */
export const cliLoginHeaders = [
  "platform-client-device-id",
  "platform-client-hostname",
  "platform-client-os",
  "platform-client-version",
] as const;

/** Whether `login` still waits for a decision at `at`. */
function isPending(login: CliLoginRecord, at: Date): boolean {
  return login.approvedAt === null && login.deniedAt === null && login.expiresAt > at;
}

/** One answer for unknown, expired and decided login codes. */
function invalidLoginCode(): InvalidArgumentError {
  return new InvalidArgumentError("invalid request: loginCode: is invalid or has expired", {
    reason: "INVALID_LOGIN_CODE",
    violations: [{ field: "loginCode", description: "is invalid or has expired" }],
  });
}

export const getCliLogin = defineOperation({
  method: AuthService.method.getCLILogin,
  access: { kind: "caller", callers: ["user"] },
  input: z.object({ loginCode: text({ min: 1 }) }),
  async run({ input, services, now }) {
    const login = await services.storage.cliLogins.findByCode(hashSecret(input.loginCode));
    if (login === null || !isPending(login, now)) throw invalidLoginCode();
    return {
      deviceName: login.deviceName,
      os: login.clientOs,
      clientAddress: login.ipAddress,
      createdAt: timestampFromDate(login.createdAt),
      expiresAt: timestampFromDate(login.expiresAt),
      clientVersion: login.clientVersion,
    };
  },
});

/** What VerifyCLILogin decided, told after its transaction (a refusal must commit before it throws). */
type Decision =
  | { readonly kind: "approved" | "denied"; readonly login: CliLoginRecord }
  | {
      readonly kind: "wrong_code";
      readonly login: CliLoginRecord;
      readonly cancelled: boolean;
      /** Wrong codes still allowed before the login is cancelled. */
      readonly left: number;
    }
  | { readonly kind: "device_elsewhere"; readonly login: CliLoginRecord }
  | { readonly kind: "unknown"; readonly expired?: CliLoginRecord };

export const verifyCliLogin = defineOperation({
  method: AuthService.method.verifyCLILogin,
  access: { kind: "caller", callers: ["user"] },
  input: z.object({
    loginCode: text({ min: 1 }),
    userCode: text({ min: 1, max: 64 }),
    deny: z.boolean().optional(),
  }),
  async run({ input, services, ctx, now }) {
    const { loginCode, userCode } = input;
    const user = await callerUser(services, ctx);
    const config = accountConfig(services);
    const decision = await services.storage.transaction(async (tx): Promise<Decision> => {
      const login = await tx.cliLogins.findByCode(hashSecret(loginCode));
      if (login === null) return { kind: "unknown" };
      // Its stream may still wait (its timer runs on this machine's clock): let it look again.
      if (!isPending(login, now))
        return { kind: "unknown", ...(login.expiresAt <= now && { expired: login }) };
      const audit = (action: AuditAction) =>
        auditAccount(tx, services, ctx, {
          userId: user.id,
          action,
          resource: `device:${login.deviceId}`,
          at: now,
        });
      if (!userCodeMatches(loginCode, userCode, login.userCodeHash)) {
        const failures = await tx.cliLogins.recordCodeFailure(login.id);
        const cancelled =
          failures >= maxUserCodeFailures && (await tx.cliLogins.deny(login.id, now)) !== null;
        if (cancelled) await audit("user.device.login_cancel");
        return { kind: "wrong_code", login, cancelled, left: Math.max(0, maxUserCodeFailures - failures) };
      }
      if (input.deny) {
        if ((await tx.cliLogins.deny(login.id, now)) === null) return { kind: "unknown" };
        await audit("user.device.login_deny");
        return { kind: "denied", login };
      }
      // A device id is its first user's until that user lets it go (DeleteUserDevice, or the
      // account's end): nobody who learns it can sign the owner's CLI out by logging in with it.
      const previous = await tx.userDevices.findById(login.deviceId);
      if (previous && previous.userId !== user.id) {
        await tx.cliLogins.deny(login.id, now);
        await audit("user.device.login_refuse");
        return { kind: "device_elsewhere", login };
      }
      const approved = await tx.cliLogins.approve(login.id, user.id, now);
      if (approved === null) return { kind: "unknown" };
      const { sessionId, expiresAt } = await insertAuthSession(tx, services, {
        userId: user.id,
        now,
        ttlSeconds: config.deviceSessionTtlSeconds,
        from: login,
      });
      // The same user logs the device in again (a new key): the old binding and its session end.
      if (previous) {
        await tx.userDevices.deleteById(previous.id);
        await tx.authSessions.revoke(previous.sessionId, now);
      }
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
      await audit("user.device.login");
      return { kind: "approved", login: approved };
    });
    if (decision.kind === "unknown") {
      if (decision.expired)
        await services.events.publish(loginTopic(decision.expired.id), null).catch(() => undefined);
      throw invalidLoginCode();
    }
    // After the commit, so the woken stream finds the decision.
    const decided = decision.kind !== "wrong_code" || decision.cancelled;
    if (decided) await services.events.publish(loginTopic(decision.login.id), null).catch(() => undefined);
    if (decision.kind === "wrong_code") {
      const what = decision.cancelled
        ? `does not match; ${maxUserCodeFailures} wrong codes cancel the login, so it is cancelled: run the login again`
        : `does not match the code the CLI shows; ${maxUserCodeFailures} wrong codes cancel the login (${decision.left} more ${decision.left === 1 ? "try" : "tries"} left)`;
      throw new InvalidArgumentError(`invalid request: userCode: ${what}`, {
        reason: decision.cancelled ? "CLI_LOGIN_CANCELLED" : "INVALID_USER_CODE",
        violations: [{ field: "userCode", description: what }],
      });
    }
    if (decision.kind === "device_elsewhere") {
      throw new PermissionDeniedError(
        "this CLI's device id is signed in to another account; the login is refused (the CLI must use a new device id)",
        { reason: "DEVICE_BOUND_TO_ANOTHER_USER" },
      );
    }
    return {};
  },
});
