/**
 * The OpenSSH key revocation list (KRL), the binary file sshd's `RevokedKeys` and
 * `ssh-keygen -Q` read, written by our own encoder after OpenSSH's PROTOCOL.krl:
 *
 *     uint64 magic "SSHKRL\n\0" | uint32 format version 1 | uint64 krl_version
 *     uint64 generated_date | uint64 flags | string reserved | string comment
 *     then sections: byte type | string data
 *
 * Only certificate sections are written (type 1): per CA key, `string ca_key | string reserved`
 * then a serial list subsection (0x20: uint64 serials in ascending order). Our serials are random
 * uint64s, so ranges and bitmaps would not make the list smaller.
 *
 * @module
 */
import { SshWriter } from "../../lib/ssh-wire.js";

const KRL_MAGIC = 0x5353484b524c0a00n;
const KRL_FORMAT_VERSION = 1;
const SECTION_CERTIFICATES = 1;
const CERT_SERIAL_LIST = 0x20;

/** Revoked certificate serials of the certificates one CA key signed. */
export interface KrlCertificates {
  /** The CA's public key blob (SSH wire encoding), as certificates carry it. */
  readonly caKeyBlob: Uint8Array;
  /** uint64 serials; duplicates are written once. */
  readonly serials: readonly bigint[];
}

export interface KrlParams {
  /** Goes up each time the list changes; relying parties may ignore older lists. */
  readonly version: bigint;
  readonly generatedAt: Date;
  readonly comment?: string;
  readonly certificates: readonly KrlCertificates[];
}

/** Encodes a KRL. */
export function encodeKrl(params: KrlParams): Uint8Array {
  const out = new SshWriter()
    .uint64(KRL_MAGIC)
    .uint32(KRL_FORMAT_VERSION)
    .uint64(params.version)
    .uint64(BigInt(Math.floor(params.generatedAt.getTime() / 1000)))
    .uint64(0n)
    .string(new Uint8Array(0))
    .string(params.comment ?? "");
  for (const { caKeyBlob, serials } of params.certificates) {
    if (serials.length === 0) continue;
    const sorted = BigUint64Array.from(new Set(serials)).sort();
    // One buffer for the whole list: 100,000 serials are 800 kB, not 100,000 small arrays.
    const list = new Uint8Array(sorted.length * 8);
    const view = new DataView(list.buffer);
    for (let i = 0; i < sorted.length; i++) view.setBigUint64(i * 8, sorted[i]!);
    const section = new SshWriter()
      .string(caKeyBlob)
      .string(new Uint8Array(0))
      .raw(new Uint8Array([CERT_SERIAL_LIST]))
      .string(list);
    out.raw(new Uint8Array([SECTION_CERTIFICATES])).string(section.bytes());
  }
  return out.bytes();
}
