/**
 * Signing in and out: `wap login` (the device login the server speaks: a P-256 device key, the
 * StreamCLILogin stream, approval in the browser), `wap logout`, `wap whoami`/`wap status`.
 *
 * @module
 */
import { execFile } from "node:child_process";
import { createPrivateKey, createPublicKey, generateKeyPairSync, randomUUID } from "node:crypto";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import { createDaemonClient } from "@wap/client";
import type { SignedInUser } from "../config.js";
import { formatDuration } from "../duration.js";
import { CliError, usageError } from "../exit-codes.js";
import { printable, table } from "../output.js";
import { explainRpcError, RpcError } from "../rpc-errors.js";
import { type CommandContext, clientHeaders, serverOf, withSession } from "../session.js";
import { readCertificateFile } from "../ssh/certificate-files.js";
import { listWorkspaces } from "../workspaces.js";

export interface LoginOptions {
  readonly browser: boolean;
}

/** Whether a browser can be opened here: a desktop session, not a bare terminal or SSH login. */
function canOpenBrowser(env: NodeJS.ProcessEnv): boolean {
  if (process.platform === "darwin" || process.platform === "win32") return true;
  return Boolean(env.DISPLAY || env.WAYLAND_DISPLAY);
}

export async function login(ctx: CommandContext, options: LoginOptions): Promise<void> {
  const config = await ctx.store.read();
  const server = serverOf(ctx, config);
  if (server === undefined) throw usageError("which server? `wap login --server https://wap.example.com`");
  await ctx.store.ensureDir();

  // The same device signs in again to the same server with its id and key; elsewhere it is new.
  const same = config.server === server && config.deviceId !== undefined;
  // Another server: nothing of the previous sign-in (device, keys, certificates) carries over.
  if (!same && config.server !== undefined) await ctx.store.clear();
  const deviceId = same && config.deviceId !== undefined ? config.deviceId : randomUUID();
  let keyPem = same ? await ctx.store.readFile(ctx.store.deviceKeyFile) : undefined;
  if (keyPem === undefined) {
    const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    keyPem = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    await ctx.store.writeFile(ctx.store.deviceKeyFile, keyPem);
  }
  const publicPem = createPublicKey(createPrivateKey(keyPem))
    .export({ type: "spki", format: "pem" })
    .toString();

  const client = createDaemonClient({ baseUrl: server, headers: clientHeaders(deviceId) });
  const abort = new AbortController();
  const interrupted = () => abort.abort();
  process.once("SIGINT", interrupted);
  try {
    const stream = client.auth
      .streamCLILogin({ authMethod: "soft", authPubkey: publicPem }, { signal: abort.signal })
      [Symbol.asyncIterator]();
    const first = await stream.next();
    const url = first.done ? "" : first.value.verificationUrl;
    if (url === "") throw new CliError(`${server} did not send a verification URL: is it a wap server?`);
    const userCode = first.done ? "" : first.value.userCode;
    ctx.out.note(
      `To sign in, open this page in a browser where you are signed in to ${server}:\n\n  ${url}\n`,
    );
    if (userCode !== "") {
      ctx.out.note(
        `Type this code on the page, then approve: ${userCode}\n(three wrong codes cancel the sign-in)\n`,
      );
    }
    if (options.browser && canOpenBrowser(ctx.env)) {
      // A browser that fails to start leaves the URL above to copy.
      const { default: open } = await import("open");
      await open(url).catch(() => undefined);
    }
    ctx.out.note("Waiting for the sign-in to be approved (Ctrl-C to give up)...");
    const second = await stream.next();
    const user = second.done ? undefined : second.value.user;
    if (user === undefined)
      throw new CliError("the server ended the sign-in without an answer: run `wap login` again");
    const signedIn: SignedInUser = {
      id: user.id,
      username: user.username,
      email: user.email,
      name: user.name,
    };
    await ctx.store.update((previous) => ({
      server,
      deviceId,
      user: signedIn,
      ...(same && previous.workspace ? { workspace: previous.workspace } : {}),
    }));
    ctx.out.result(
      { server, deviceId, user: signedIn },
      () => `Signed in to ${server} as ${printable(user.username)} <${printable(user.email)}>.`,
    );
  } catch (error) {
    throw loginError(error, server, abort.signal.aborted);
  } finally {
    process.off("SIGINT", interrupted);
    client.close();
  }
}

function loginError(error: unknown, server: string, interrupted: boolean): unknown {
  if (error instanceof CliError) return error;
  if (interrupted) return new CliError("sign-in cancelled");
  const code = ConnectError.from(error).code;
  if (code === Code.DeadlineExceeded) {
    return new CliError("the sign-in was not approved in time: run `wap login` again and approve it sooner");
  }
  if (code === Code.PermissionDenied || code === Code.Aborted) {
    return new CliError(
      "the sign-in was refused in the browser: run `wap login` again if that was a mistake",
    );
  }
  return explainRpcError(error, server, "device");
}

export async function logout(ctx: CommandContext): Promise<void> {
  if (ctx.options.token ?? ctx.env.WAP_TOKEN) {
    throw usageError(
      "signed in with a token (WAP_TOKEN or --token), which is never stored: there is nothing to sign out",
    );
  }
  const config = await ctx.store.read();
  let warning: string | undefined;
  if (config.deviceId !== undefined && config.server !== undefined && config.user !== undefined) {
    try {
      await withSession(ctx, (session) => session.clients.users.deleteUserDevice({ id: config.deviceId! }));
    } catch (error) {
      // Already removed on the server: nothing left to do there.
      if (!(error instanceof RpcError && error.code === Code.Unauthenticated)) {
        warning = `${error instanceof Error ? error.message : String(error)}; the device may still be listed on the server (remove it from your account's devices)`;
      }
    }
  }
  await forgetAgentKeys(ctx);
  await ctx.store.clear();
  if (warning !== undefined) ctx.out.note(`warning: ${warning}`);
  ctx.out.result({ signedOut: true, server: config.server ?? null }, () =>
    config.server === undefined ? "Not signed in; local state removed." : `Signed out of ${config.server}.`,
  );
}

/** Removes the agent's copies of the keys this CLI added (they would expire anyway). */
async function forgetAgentKeys(ctx: CommandContext): Promise<void> {
  if (!ctx.env.SSH_AUTH_SOCK) return;
  const files = await readdir(ctx.store.sshDir).catch(() => [] as string[]);
  for (const file of files.filter((f) => f.endsWith(".pub") && !f.endsWith("-cert.pub"))) {
    await new Promise<void>((resolve) => {
      execFile("ssh-add", ["-d", join(ctx.store.sshDir, file)], { env: ctx.env, timeout: 5_000 }, () =>
        resolve(),
      );
    });
  }
}

interface CertificateState {
  readonly caId: string;
  readonly file: string;
  readonly principals: readonly string[];
  readonly validBefore: string;
  readonly expired: boolean;
  readonly remaining: string;
}

async function certificateStates(ctx: CommandContext): Promise<CertificateState[]> {
  const files = await readdir(ctx.store.sshDir).catch(() => [] as string[]);
  const states: CertificateState[] = [];
  for (const file of files.filter((f) => f.endsWith("-cert.pub")).sort()) {
    const path = join(ctx.store.sshDir, file);
    const info = await readCertificateFile(ctx.store, path);
    if (info === undefined) continue;
    const left = info.validBefore.getTime() - Date.now();
    states.push({
      caId: file.slice(0, -"-cert.pub".length),
      file: path,
      principals: info.principals,
      validBefore: info.validBefore.toISOString(),
      expired: left <= 0,
      remaining: formatDuration(left),
    });
  }
  return states;
}

export async function status(ctx: CommandContext): Promise<void> {
  await withSession(ctx, async (session) => {
    const user = session.kind === "device" ? (await session.clients.users.whoami({})).user : undefined;
    const workspaces = await listWorkspaces(session);
    const currentId = ctx.options.workspace ?? session.config.workspace?.id;
    const certificates = await certificateStates(ctx);
    const result = {
      server: session.server,
      signedInWith: session.kind === "device" ? "device" : "token",
      ...(user === undefined
        ? { serviceAccountId: session.subjectId }
        : { user: { id: user.id, username: user.username, email: user.email, name: user.name } }),
      ...(session.kind === "device" ? { deviceId: session.config.deviceId } : {}),
      workspaces: workspaces.map((w) => ({
        id: w.id,
        name: w.name,
        current: w.id === currentId || w.name === currentId || workspaces.length === 1,
      })),
      certificates,
    };
    ctx.out.result(result, () => {
      const lines = [
        ["Server", session.server],
        user === undefined
          ? ["Service account", session.subjectId || "(token)"]
          : ["User", printable(`${user.username} (${user.name} <${user.email}>)`)],
        ...(session.kind === "device" ? [["Device", session.config.deviceId ?? ""]] : []),
        [
          "Workspaces",
          result.workspaces.map((w) => printable(w.current ? `${w.name} (current)` : w.name)).join(", ") ||
            "none",
        ],
      ];
      const width = Math.max(...lines.map(([k]) => k!.length)) + 2;
      const text = lines.map(([k, v]) => `${`${k}:`.padEnd(width)}${v}`).join("\n");
      const certs =
        certificates.length === 0
          ? "SSH certificates: none yet (`wap ssh` or `wap config ssh` gets them)"
          : `SSH certificates:\n${table(
              ["CA", "PRINCIPALS", "VALID UNTIL", "LEFT"],
              certificates.map((c) => [
                c.caId,
                c.principals.join(","),
                c.validBefore,
                c.expired ? "expired" : c.remaining,
              ]),
            )}`;
      return `${text}\n${certs}`;
    });
  });
}
