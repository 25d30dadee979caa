/**
 * `wap cert ssh` (a user certificate for an existing key, or renewal of wap's own) and
 * `wap cert tls` (an X.509 certificate from a CSR, or for a fresh key with a CSR made here).
 *
 * @module
 */
import "reflect-metadata";
import { webcrypto } from "node:crypto";
import { chmod, rm, writeFile } from "node:fs/promises";
import { isIP } from "node:net";
import { basename, join, resolve } from "node:path";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import * as x509 from "@peculiar/x509";
import {
  AuthorityType,
  SignSSHCertificateRequest_CertificateType,
  SignX509CertificateRequest_X509Usage,
} from "@wap/api";
import { readSshCertificate, type SshCertificateInfo } from "@wap/ssh-wire";
import { chooseAuthority, subjectAccess } from "../access.js";
import { formatDuration } from "../duration.js";
import { CliError, usageError } from "../exit-codes.js";
import { printable } from "../output.js";
import { type CommandContext, withSession } from "../session.js";
import { currentCertificate } from "../ssh/certificate-files.js";
import { ensureCertificate } from "../ssh/user-certificates.js";
import { resolveWorkspace } from "../workspaces.js";

export interface CertSshOptions {
  readonly key?: string;
  readonly ca?: string;
  readonly ttlMs?: number;
  /** Only for wap's own keys: keep the certificate while it has more than this left. */
  readonly renewBeforeMs?: number;
  readonly quiet: boolean;
}

const ttlField = (ttlMs: number | undefined) =>
  ttlMs === undefined ? {} : { ttl: { seconds: BigInt(Math.round(ttlMs / 1000)) } };

function describeSshCertificate(file: string, caName: string, info: SshCertificateInfo) {
  return {
    certificateFile: file,
    ca: caName,
    caPublicKey: info.caPublicKey,
    keyId: info.keyId,
    principals: info.principals,
    validAfter: info.validAfter.toISOString(),
    validBefore: info.validBefore.toISOString(),
  };
}

function sshCertificateText(described: ReturnType<typeof describeSshCertificate>): string {
  const left = formatDuration(Date.parse(described.validBefore) - Date.now());
  return [
    `Certificate: ${described.certificateFile}`,
    `CA:          ${described.ca} (${described.caPublicKey.slice(0, 40)}...)`,
    `Principals:  ${described.principals.join(", ")}`,
    `Valid:       ${described.validAfter} to ${described.validBefore} (${left} left)`,
  ].join("\n");
}

/** `id_ed25519.pub` → `id_ed25519-cert.pub`, as ssh looks for it next to the key. */
export function certificatePathFor(publicKeyFile: string): string {
  return `${publicKeyFile.replace(/\.pub$/, "")}-cert.pub`;
}

export async function certSsh(ctx: CommandContext, options: CertSshOptions): Promise<void> {
  if (options.key !== undefined && options.renewBeforeMs !== undefined) {
    throw usageError("--renew-if-under is for wap's own keys: leave out --key");
  }
  // The renewal hook runs before every ssh: answer from the files alone while the certificate is good.
  if (options.key === undefined && options.ca !== undefined && options.renewBeforeMs !== undefined) {
    const current = await currentCertificate(ctx.store, ctx.env, options.ca, options.renewBeforeMs);
    if (current !== undefined) {
      if (!options.quiet) {
        const described = describeSshCertificate(current.certificateFile, options.ca, current.info);
        ctx.out.result({ ...described, renewed: false }, () => sshCertificateText(described));
      }
      return;
    }
  }
  await withSession(ctx, async (session) => {
    const workspace = await resolveWorkspace(ctx, session);
    const access = await subjectAccess(session, workspace.id);
    const ca = chooseAuthority(access.certificateAuthorities, options.ca, "SSH");
    if (options.key !== undefined) {
      const keyFile = resolve(options.key.endsWith(".pub") ? options.key : `${options.key}.pub`);
      const publicKey = await ctx.store.readFile(keyFile);
      if (publicKey === undefined)
        throw new CliError(`no public key at ${keyFile}: pass the .pub file with --key`);
      const signed = await session.clients.certificates.signSSHCertificate({
        workspaceId: workspace.id,
        caId: ca.id,
        type: SignSSHCertificateRequest_CertificateType.USER,
        publicKey: publicKey.trim(),
        ...ttlField(options.ttlMs),
      });
      const file = certificatePathFor(keyFile);
      await writeFile(file, `${signed.signedCertificate.trim()}\n`, { mode: 0o644 });
      const described = describeSshCertificate(file, ca.name, readSshCertificate(signed.signedCertificate));
      if (!options.quiet) ctx.out.result(described, () => sshCertificateText(described));
      return;
    }
    const certificate = await ensureCertificate(session, ctx.store, ctx.env, {
      workspaceId: workspace.id,
      caId: ca.id,
      caPublicKey: ca.publicKey,
      // Without a margin, a new certificate every time.
      renewBeforeMs: options.renewBeforeMs ?? Number.POSITIVE_INFINITY,
      ...(options.ttlMs === undefined ? {} : { ttlMs: options.ttlMs }),
    });
    const described = {
      ...describeSshCertificate(certificate.certificateFile, ca.name, certificate.info),
      identityFile: certificate.identityFile,
      inAgent: certificate.inAgent,
      renewed: certificate.renewed,
    };
    if (!options.quiet) ctx.out.result(described, () => sshCertificateText(described));
  });
}

export type TlsUsage = "client" | "server" | "both";

const usages: Record<TlsUsage, SignX509CertificateRequest_X509Usage> = {
  client: SignX509CertificateRequest_X509Usage.CLIENT_AUTH,
  server: SignX509CertificateRequest_X509Usage.SERVER_AUTH,
  both: SignX509CertificateRequest_X509Usage.CLIENT_AND_SERVER,
};

export interface CertTlsOptions {
  readonly csr?: string;
  readonly cn?: string;
  readonly san: readonly string[];
  readonly usage: TlsUsage;
  readonly ttlMs?: number;
  readonly ca?: string;
  readonly out: string;
}

/** A SAN entry by its form: an IP address, an email address, a URI, else a DNS name. */
function altName(value: string): x509.JsonGeneralName {
  if (isIP(value)) return { type: "ip", value };
  if (/^[^@\s]+@[^@\s]+$/.test(value)) return { type: "email", value };
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return { type: "url", value };
  return { type: "dns", value };
}

/** A fresh Ed25519 key and a CSR for it: the key PEM (PKCS#8) and the CSR PEM. */
async function keyAndCsr(commonName: string, sans: readonly string[]): Promise<{ key: string; csr: string }> {
  const keys = (await webcrypto.subtle.generateKey({ name: "Ed25519" }, true, [
    "sign",
    "verify",
  ])) as webcrypto.CryptoKeyPair;
  const csr = await x509.Pkcs10CertificateRequestGenerator.create(
    {
      name: new x509.Name([{ CN: [{ utf8String: commonName }] }]),
      keys: keys as never,
      signingAlgorithm: { name: "Ed25519" },
      extensions: sans.length === 0 ? [] : [new x509.SubjectAlternativeNameExtension(sans.map(altName))],
    },
    webcrypto as unknown as Parameters<typeof x509.Pkcs10CertificateRequestGenerator.create>[1],
  );
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey("pkcs8", keys.privateKey));
  const body = pkcs8
    .toString("base64")
    .replace(/(.{64})/g, "$1\n")
    .trimEnd();
  return {
    key: `-----BEGIN PRIVATE KEY-----\n${body}\n-----END PRIVATE KEY-----\n`,
    csr: csr.toString("pem"),
  };
}

/** A file name from a certificate's name: what is not a safe character becomes `_`. */
const fileNameOf = (name: string) =>
  name.replace(/[^A-Za-z0-9._-]/g, "_").replace(/^\.+/, "_") || "certificate";

export async function certTls(ctx: CommandContext, options: CertTlsOptions): Promise<void> {
  if (options.csr !== undefined && options.cn !== undefined) {
    throw usageError("give either --csr <file> or --cn <name>, not both");
  }
  // A client certificate always names the caller by id: with neither, that is its CN.
  if (options.csr === undefined && options.cn === undefined && options.usage !== "client") {
    throw usageError("give --csr <file> or --cn <name> (a server certificate names a host)");
  }
  if (options.csr !== undefined && options.san.length > 0) {
    throw usageError("--san goes with --cn; a CSR carries its own names");
  }
  await withSession(ctx, async (session) => {
    let csr: string;
    let key: string | undefined;
    let name: string;
    if (options.csr !== undefined) {
      const text = await ctx.store.readFile(resolve(options.csr));
      if (text === undefined) throw new CliError(`no CSR at ${options.csr}`);
      csr = text;
      name = fileNameOf(basename(options.csr).replace(/\.(csr|pem|req)$/i, ""));
    } else {
      const commonName = options.cn ?? session.subjectId;
      if (options.cn === undefined) {
        ctx.out.note(
          `The certificate names you: CN=${commonName} (a client certificate carries the caller's id).`,
        );
      }
      // A server certificate names its host; a client certificate carries only its CN.
      const sans = options.san.length > 0 || options.usage === "client" ? options.san : [commonName];
      const generated = await keyAndCsr(commonName, sans);
      csr = generated.csr;
      key = generated.key;
      name = fileNameOf(commonName);
    }
    const workspace = await resolveWorkspace(ctx, session);
    const { certificateAuthorities } = await session.clients.certificates.listCertificateAuthorities({
      workspaceId: workspace.id,
    });
    const usable = certificateAuthorities.filter(
      (ca) => ca.authorityType === AuthorityType.X509 && ca.isActive,
    );
    const ca = chooseAuthority(usable, options.ca, "X.509");
    const signed = await session.clients.certificates.signX509Certificate({
      workspaceId: workspace.id,
      caId: ca.id,
      csr,
      usage: usages[options.usage],
      ...ttlField(options.ttlMs),
    });
    const files = {
      certificate: join(options.out, `${name}.crt`),
      key: key === undefined ? undefined : join(options.out, `${name}.key`),
      caChain: join(options.out, `${name}-ca.crt`),
    };
    if (key !== undefined) {
      // A new file, created 0600: an existing one (readable by others, or a link elsewhere) is
      // replaced, never written through.
      await rm(files.key!, { force: true });
      await writeFile(files.key!, key, { mode: 0o600, flag: "wx" });
      await chmod(files.key!, 0o600);
    }
    await writeFile(files.certificate, ensureNewline(signed.certificate), { mode: 0o644 });
    await writeFile(files.caChain, ensureNewline(signed.caChain), { mode: 0o644 });
    const expiresAt = signed.expiresAt ? timestampDate(signed.expiresAt).toISOString() : null;
    ctx.out.result({ ...files, ca: ca.name, caId: ca.id, expiresAt }, () =>
      [
        `Wrote ${[files.certificate, files.key, files.caChain].filter((f) => f !== undefined).join(", ")}`,
        `Signed by ${printable(ca.name)}; expires ${expiresAt ?? "(unknown)"}.`,
      ].join("\n"),
    );
  });
}

const ensureNewline = (text: string) => (text.endsWith("\n") ? text : `${text}\n`);
