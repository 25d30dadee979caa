/**
 * `wap audit key`, `wap audit export` and `wap audit verify`: the workspace's audit chain as a
 * file, and its offline check against the workspace's public key (docs/audit.md). Verification
 * needs no server and no sign-in.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { chmod, readFile, writeFile } from "node:fs/promises";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ExportAuditLogsRequest_Format } from "@wap/api";
import {
  ChainFileError,
  findRecording,
  rawAuditPublicKey,
  readChainFile,
  verifyChainFile,
} from "@wap/audit-chain";
import { CliError, ExitCode, usageError } from "../exit-codes.js";
import { type CommandContext, withSession } from "../session.js";
import { resolveWorkspace } from "../workspaces.js";

/** Writes the workspace's audit public key (PEM) to `output`, or prints it. */
export async function auditKey(ctx: CommandContext, options: { output?: string }): Promise<void> {
  await withSession(ctx, async (session) => {
    const workspace = await resolveWorkspace(ctx, session);
    const { publicKeyPem } = await session.clients.util.getAuditSigningKey({ workspaceId: workspace.id });
    if (options.output !== undefined) {
      await writeFile(options.output, publicKeyPem);
      ctx.out.result(
        { workspaceId: workspace.id, file: options.output },
        () => `Wrote the audit key of ${workspace.name} to ${options.output}.`,
      );
    } else ctx.out.result({ workspaceId: workspace.id, publicKeyPem }, () => publicKeyPem.trimEnd());
  });
}

export interface AuditExportOptions {
  readonly format: "json" | "csv";
  readonly since?: Date;
  readonly until?: Date;
  readonly output: string;
}

/** Writes a stretch of the workspace's audit chain, with its checkpoints, to a file. */
export async function auditExport(ctx: CommandContext, options: AuditExportOptions): Promise<void> {
  if (options.since && options.until && options.since.getTime() > options.until.getTime()) {
    throw usageError("--until must not be before --since");
  }
  await withSession(ctx, async (session) => {
    const workspace = await resolveWorkspace(ctx, session);
    const { data } = await session.clients.util.exportAuditChain({
      workspaceId: workspace.id,
      format:
        options.format === "json" ? ExportAuditLogsRequest_Format.JSON : ExportAuditLogsRequest_Format.CSV,
      ...(options.since && { startDate: timestampFromDate(options.since) }),
      ...(options.until && { endDate: timestampFromDate(options.until) }),
    });
    // The log names people, addresses and devices: readable by its owner only, whatever the umask.
    await writeFile(options.output, data, { mode: 0o600 });
    await chmod(options.output, 0o600);
    const file = readChainFile(new TextDecoder().decode(data));
    const summary = {
      workspaceId: workspace.id,
      file: options.output,
      entries: file.entries.length,
      first: file.start.position + 1,
      last: file.start.position + file.entries.length,
      checkpoints: file.checkpoints.length,
    };
    ctx.out.result(summary, () =>
      summary.entries === 0
        ? `Wrote ${options.output}: no audit entries in that time.`
        : `Wrote ${options.output}: entries ${summary.first} to ${summary.last} of ${workspace.name}'s audit chain, ${summary.checkpoints} checkpoint(s).`,
    );
  });
}

/**
 * Checks `file` against the public key in `keyFile`, and each of `recordings` (session recording
 * files) against the SHA-256 the chain recorded when it completed. Returns the exit status: 0
 * when everything verifies, 1 (the first problem printed) when not.
 */
export async function auditVerify(
  ctx: CommandContext,
  path: string,
  keyFile: string,
  recordings: readonly string[] = [],
): Promise<number> {
  const [text, pem] = await Promise.all([readText(path), readText(keyFile)]);
  const key = rawAuditPublicKey(pem);
  if (key === null)
    throw usageError(`--key: ${keyFile} is not an Ed25519 public key in PEM (see \`wap audit key\`)`);
  let file: ReturnType<typeof readChainFile>;
  try {
    file = readChainFile(text);
  } catch (error) {
    if (error instanceof ChainFileError)
      throw new CliError(`${path} is not an audit chain export: ${error.message}`);
    throw error;
  }
  const verdict = verifyChainFile(file, key);
  if (verdict.ok) {
    for (const recording of recordings) {
      const sha256 = createHash("sha256")
        .update(
          await readFile(recording).catch(() => Promise.reject(new CliError(`cannot read ${recording}`))),
        )
        .digest("hex");
      const match = findRecording(file, sha256);
      if (match === null) {
        const message = `recording ${recording} matches no completed recording of the chain: edited, or not in this export`;
        ctx.out.result(
          { ok: false, problem: "recording_mismatch", file: recording, message },
          () => `FAILED: ${message}`,
        );
        return ExitCode.error;
      }
    }
    ctx.out.result({ ...verdict, workspaceId: file.workspaceId }, () =>
      verdict.entries === 0
        ? `OK: ${path} holds no entries.`
        : `OK: entries ${file.start.position + 1} to ${verdict.last} of workspace ${file.workspaceId} verify; ${verdict.checkpoints} checkpoint(s) signed by the key.` +
          (recordings.length > 0 ? ` ${recordings.length} recording file(s) match the chain.` : ""),
    );
    return ExitCode.ok;
  }
  ctx.out.result({ ...verdict, workspaceId: file.workspaceId }, () => `FAILED: ${verdict.message}`);
  return ExitCode.error;
}

async function readText(path: string): Promise<string> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    throw new CliError(`cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
}
