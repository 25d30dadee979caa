/**
 * The little of the OpenSSH wire format the agent reads: a public key line's blob, and the fields
 * of a host certificate it checks before handing it to sshd (PROTOCOL.certkeys).
 *
 * @module
 */

/** The base64 blob of an authorized_keys line (`<type> <base64> [comment]`). */
export function keyBlobOf(line: string): Buffer {
  return Buffer.from(line.trim().split(/\s+/)[1] ?? "", "base64");
}

export interface SshCertificate {
  readonly certType: "user" | "host";
  /** The certified public key, as a key blob (the certificate's key fields re-wrapped). */
  readonly keyBlob: Buffer;
  readonly principals: readonly string[];
  readonly validAfter: Date;
  readonly validBefore: Date;
  /** The blob of the CA key that signed it. */
  readonly signatureKey: Buffer;
}

class Reader {
  #at = 0;
  constructor(private readonly blob: Buffer) {}
  bytes(): Buffer {
    if (this.#at + 4 > this.blob.length) throw new Error("the certificate is truncated");
    const length = this.blob.readUInt32BE(this.#at);
    const value = this.blob.subarray(this.#at + 4, this.#at + 4 + length);
    if (value.length !== length) throw new Error("the certificate is truncated");
    this.#at += 4 + length;
    return value;
  }
  uint32(): number {
    const value = this.blob.readUInt32BE(this.#at);
    this.#at += 4;
    return value;
  }
  uint64(): bigint {
    const value = this.blob.readBigUInt64BE(this.#at);
    this.#at += 8;
    return value;
  }
  get done(): boolean {
    return this.#at >= this.blob.length;
  }
}

/** How many key fields follow the nonce in a certificate of each key type. */
const keyFieldCount: Record<string, number> = {
  "ssh-ed25519-cert-v01@openssh.com": 1,
  "ssh-rsa-cert-v01@openssh.com": 2,
  "ecdsa-sha2-nistp256-cert-v01@openssh.com": 2,
  "ecdsa-sha2-nistp384-cert-v01@openssh.com": 2,
  "ecdsa-sha2-nistp521-cert-v01@openssh.com": 2,
};

function sshString(value: string | Uint8Array): Buffer {
  const bytes = Buffer.from(value);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length);
  return Buffer.concat([length, bytes]);
}

/** Reads an OpenSSH certificate line. Throws on anything that is not one. */
export function parseSshCertificate(line: string): SshCertificate {
  const [type, base64] = line.trim().split(/\s+/);
  const reader = new Reader(Buffer.from(base64 ?? "", "base64"));
  const certKeyType = reader.bytes().toString();
  const fields = keyFieldCount[certKeyType];
  if (fields === undefined || certKeyType !== type) throw new Error(`not an OpenSSH certificate: ${type}`);
  reader.bytes(); // nonce
  const keyParts: Buffer[] = [];
  for (let i = 0; i < fields; i++) keyParts.push(reader.bytes());
  // RSA certificates hold e then n, as the plain key does; ECDSA the curve then the point.
  const plainType = certKeyType.replace("-cert-v01@openssh.com", "");
  const keyBlob = Buffer.concat([sshString(plainType), ...keyParts.map((p) => sshString(p))]);
  reader.uint64(); // serial
  const certType = reader.uint32();
  reader.bytes(); // key id
  const list = new Reader(reader.bytes());
  const principals: string[] = [];
  while (!list.done) principals.push(list.bytes().toString());
  const toDate = (seconds: bigint) =>
    new Date(seconds > 8_640_000_000_000n ? 8.64e15 : Number(seconds) * 1000);
  const validAfter = toDate(reader.uint64());
  const validBefore = toDate(reader.uint64());
  reader.bytes(); // critical options
  reader.bytes(); // extensions
  reader.bytes(); // reserved
  const signatureKey = reader.bytes();
  return {
    certType: certType === 2 ? "host" : "user",
    keyBlob,
    principals,
    validAfter,
    validBefore,
    signatureKey,
  };
}
