/**
 * Reads the public facts of an OpenSSH certificate line (PROTOCOL.certkeys): what a client shows
 * and checks before it reuses a certificate (its principals, validity and signing CA). The
 * signature is not verified here; the server that accepts the certificate does that.
 *
 * @module
 */
import { decodeBase64Lenient } from "./base64.js";
import { fromUtf8 } from "./bytes.js";
import { SshReader, SshWriter } from "./wire.js";

export interface SshCertificateInfo {
  /** e.g. `ssh-ed25519-cert-v01@openssh.com`. */
  readonly certType: string;
  readonly type: "user" | "host";
  readonly serial: bigint;
  readonly keyId: string;
  readonly principals: readonly string[];
  /** The certified public key as an authorized_keys line without comment (`ssh-ed25519 AAAA…`). */
  readonly publicKey: string;
  readonly validAfter: Date;
  /** Far in the future (year 292277026596) for a certificate valid forever. */
  readonly validBefore: Date;
  /** The signing CA's public key as an authorized_keys line without comment. */
  readonly caPublicKey: string;
  /** Critical options by name (`source-address`, `force-command`, ...); flags have the value `""`. */
  readonly criticalOptions: Readonly<Record<string, string>>;
  /** Extensions by name (`permit-pty`, ...); flags have the value `""`. */
  readonly extensions: Readonly<Record<string, string>>;
}

/**
 * A name/data list: a non-empty data is itself one string (the value). A name listed twice, or
 * data that is not one string, is refused (OpenSSH refuses such certificates too).
 */
function optionList(bytes: Uint8Array, what: string): Record<string, string> {
  const list = new SshReader(bytes);
  const options: Record<string, string> = Object.create(null);
  while (list.remaining > 0) {
    const name = fromUtf8(list.string());
    const data = list.string();
    if (Object.hasOwn(options, name)) throw new RangeError(`the certificate lists the ${what} ${name} twice`);
    let value = "";
    if (data.length > 0) {
      const inner = new SshReader(data);
      value = fromUtf8(inner.string());
      if (inner.remaining > 0) throw new RangeError(`the certificate's ${what} ${name} has trailing data`);
    }
    options[name] = value;
  }
  return options;
}

/** How many wire strings (or mpints) the subject's public key occupies after the nonce. */
const publicKeyFields: Readonly<Record<string, number>> = {
  "ssh-ed25519-cert-v01@openssh.com": 1,
  "ecdsa-sha2-nistp256-cert-v01@openssh.com": 2,
  "ecdsa-sha2-nistp384-cert-v01@openssh.com": 2,
  "ecdsa-sha2-nistp521-cert-v01@openssh.com": 2,
  "ssh-rsa-cert-v01@openssh.com": 2,
  // Security keys: the key's fields, then the application.
  "sk-ssh-ed25519-cert-v01@openssh.com": 2,
  "sk-ecdsa-sha2-nistp256-cert-v01@openssh.com": 3,
};

/** Throws a RangeError naming what is wrong when `line` is not an OpenSSH certificate. */
export function readSshCertificate(line: string): SshCertificateInfo {
  const [certType = "", base64 = ""] = line.trim().split(/\s+/);
  const fields = publicKeyFields[certType];
  if (fields === undefined) throw new RangeError(`not an OpenSSH certificate (type "${certType}")`);
  const blob = decodeBase64Lenient(base64);
  if (blob === undefined) throw new RangeError("the certificate is not base64");
  const reader = new SshReader(blob);
  if (reader.text() !== certType) throw new RangeError("the certificate's type does not match its line");
  reader.string(); // nonce
  // The plain key's blob holds the same fields after its own type name (RSA: e then n).
  const plainType = certType.replace("-cert-v01@openssh.com", "");
  const keyType = plainType.startsWith("sk-") ? `${plainType}@openssh.com` : plainType;
  const key = new SshWriter().string(keyType);
  for (let i = 0; i < fields; i++) key.string(reader.string());
  const serial = reader.uint64();
  const kind = reader.uint32();
  const keyId = reader.text();
  const principals: string[] = [];
  const packed = new SshReader(reader.string());
  while (packed.remaining > 0) principals.push(fromUtf8(packed.string()));
  const validAfter = reader.uint64();
  const validBefore = reader.uint64();
  const criticalOptions = optionList(reader.string(), "critical option");
  const extensions = optionList(reader.string(), "extension");
  reader.string(); // reserved
  const caBlob = reader.string();
  return {
    certType,
    type: kind === 2 ? "host" : "user",
    serial,
    keyId,
    principals,
    publicKey: `${keyType} ${Buffer.from(key.bytes()).toString("base64")}`,
    validAfter: toDate(validAfter),
    validBefore: toDate(validBefore),
    caPublicKey: `${new SshReader(caBlob).text()} ${Buffer.from(caBlob).toString("base64")}`,
    criticalOptions,
    extensions,
  };
}

const maxDateSeconds = 8_640_000_000_000n;

function toDate(seconds: bigint): Date {
  return new Date(Number(seconds > maxDateSeconds ? maxDateSeconds : seconds) * 1000);
}
