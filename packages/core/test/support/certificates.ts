/**
 * Helpers for the certificate tests: authorities through the API, targets and daemons through
 * storage (their RPCs come later), subject keys, and `ssh-keygen -L` / `openssl` runners.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { AuthorityType, CertificateKeyType, CertificateService } from "@wap/api";
import { opensshPrivateKey, sshPublicKeyLine } from "@wap/ssh-wire";
import { type GeneratedKey, generateKeyPair } from "../../src/crypto/generate-key.js";
import { type CaKeySpec, describeKeySpec, keyBitsOf, keyTypeOf } from "../../src/crypto/key-types.js";
import type { DaemonStatusValue } from "../../src/storage/daemons.js";
import type { TargetRecord } from "../../src/storage/targets.js";
import type { TestPlatform } from "../support.js";

export const run = promisify(execFile);

export type Owner = Awaited<ReturnType<TestPlatform["owner"]>>;

export const duration = (seconds: number) => ({ seconds: BigInt(seconds), nanos: 0 });

/** Creates an authority through the API. */
export async function createAuthority(
  t: TestPlatform,
  owner: Owner,
  spec: CaKeySpec,
  request: Record<string, unknown> = {},
) {
  const { certificateAuthority } = await t.call(
    owner.caller,
    CertificateService.method.createCertificateAuthority,
    {
      workspaceId: owner.workspaceId,
      name: `ca-${describeKeySpec(spec)}-${Math.random().toString(36).slice(2, 8)}`,
      keyType: CertificateKeyType[keyTypeOf(spec)],
      keyBits: keyBitsOf(spec),
      authorityType: AuthorityType.SSH,
      ...request,
    },
  );
  return certificateAuthority!;
}

/** Inserts a target through storage (TargetService comes with a later issue). */
export async function insertTarget(
  t: TestPlatform,
  workspaceId: string,
  caId: string,
  overrides: Partial<TargetRecord> = {},
): Promise<TargetRecord> {
  const now = t.clock.now();
  const target: TargetRecord = {
    id: t.platform.services.random.uuid(),
    workspaceId,
    caId,
    daemonId: null,
    name: `target-${Math.random().toString(36).slice(2, 10)}`,
    description: "",
    tags: [],
    endpoints: ["127.0.0.1:4022"],
    metadata: {},
    createdAt: now,
    updatedAt: now,
    ...overrides,
  };
  await t.storage.targets.insert(target);
  return target;
}

/** Inserts an enrolled daemon serving `targetId`; returns its caller. */
export async function insertDaemon(
  t: TestPlatform,
  workspaceId: string,
  targetId: string | null,
  status: DaemonStatusValue = "accepted",
) {
  const id = t.platform.services.random.uuid();
  const now = t.clock.now();
  await t.storage.daemons.insert({
    id,
    workspaceId,
    targetId,
    name: `daemon-${id.slice(0, 8)}`,
    status,
    recordSessions: false,
    metadata: {},
    authPublicKey: "",
    authMethod: "soft",
    onlineSince: null,
    createdAt: now,
    updatedAt: now,
  });
  if (targetId !== null) await t.storage.targets.update(workspaceId, targetId, { daemonId: id }, now);
  return { id, caller: { kind: "daemon" as const, daemonId: id, workspaceId } };
}

export interface SubjectKey {
  readonly spec: CaKeySpec;
  readonly key: GeneratedKey;
  /** authorized_keys line with a comment, as the CLI sends it. */
  readonly line: string;
}

const keys = new Map<string, Promise<SubjectKey>>();

/** A subject key per spec, generated once per test file (RSA generation is slow). */
export function subjectKey(spec: CaKeySpec, comment = "laptop@platform"): Promise<SubjectKey> {
  const name = `${describeKeySpec(spec)} ${comment}`;
  let key = keys.get(name);
  if (key === undefined) {
    key = generateKeyPair(spec).then((k) => ({
      spec,
      key: k,
      line: sshPublicKeyLine(k.publicKeySpkiDer, comment),
    }));
    keys.set(name, key);
  }
  return key;
}

/** A scratch folder for tool input files. */
export async function scratch(): Promise<{
  dir: string;
  file(name: string, text: string, mode?: number): Promise<string>;
  remove(): Promise<void>;
}> {
  const dir = await mkdtemp(join(tmpdir(), "wap-cert-test-"));
  let n = 0;
  return {
    dir,
    async file(name, text, mode) {
      const path = join(dir, `${++n}-${name}`);
      await writeFile(path, text, mode === undefined ? undefined : { mode });
      return path;
    },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/** The private key of a subject key in openssh-key-v1 form, for `ssh -i`. */
export function identityFileText(key: SubjectKey): string {
  return opensshPrivateKey(key.key.privateKeyPkcs8Der);
}

/** What `ssh-keygen -L` says about a certificate (it verifies the CA signature while parsing). */
export interface ListedCertificate {
  readonly type: string;
  readonly publicKey: string;
  readonly signingCa: string;
  readonly keyId: string;
  readonly serial: string;
  readonly validFrom: string;
  readonly validTo: string;
  readonly principals: string[];
  readonly criticalOptions: string[];
  readonly extensions: string[];
  readonly raw: string;
}

function section(raw: string, heading: string): string[] {
  const lines = raw.split("\n");
  const start = lines.findIndex((l) => l.trim().startsWith(`${heading}:`));
  if (start < 0) return [];
  if (lines[start]!.trim().endsWith("(none)")) return [];
  const out: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (!/^\s{16}/.test(line)) break;
    out.push(line.trim());
  }
  return out;
}

function field(raw: string, name: string): string {
  const match = new RegExp(`^\\s*${name}: (.*)$`, "m").exec(raw);
  return match?.[1]?.trim() ?? "";
}

export async function sshKeygenList(
  dir: { file(name: string, text: string): Promise<string> },
  certificate: string,
) {
  const path = await dir.file("cert-cert.pub", `${certificate}\n`);
  const { stdout } = await run("ssh-keygen", ["-L", "-f", path], { env: { ...process.env, TZ: "UTC" } });
  const validity = /Valid: from (\S+) to (\S+)/.exec(stdout);
  return {
    type: field(stdout, "Type"),
    publicKey: field(stdout, "Public key"),
    signingCa: field(stdout, "Signing CA"),
    keyId: field(stdout, "Key ID").replace(/^"|"$/g, ""),
    serial: field(stdout, "Serial"),
    validFrom: validity?.[1] ?? "",
    validTo: validity?.[2] ?? "",
    principals: section(stdout, "Principals"),
    criticalOptions: section(stdout, "Critical Options"),
    extensions: section(stdout, "Extensions"),
    raw: stdout,
  } satisfies ListedCertificate;
}
