/**
 * The SSH wire encoding of RFC 4251 section 5: uint32,
 * string and mpint, which public keys, private keys and certificates are all built from.
 *
 * @module
 */
import { concatBytes, fromUtf8, utf8 } from "./bytes.js";

/** Appends SSH wire values and returns the bytes. */
export class SshWriter {
  readonly #parts: Uint8Array[] = [];

  /** A big-endian 32-bit unsigned integer. */
  uint32(value: number): this {
    if (!Number.isInteger(value) || value < 0 || value > 0xffffffff) {
      throw new RangeError(`uint32 out of range: ${value}`);
    }
    const out = new Uint8Array(4);
    new DataView(out.buffer).setUint32(0, value);
    this.#parts.push(out);
    return this;
  }

  /** A big-endian 64-bit unsigned integer. */
  uint64(value: bigint): this {
    if (value < 0n || value > 0xffffffffffffffffn) throw new RangeError(`uint64 out of range: ${value}`);
    const out = new Uint8Array(8);
    new DataView(out.buffer).setBigUint64(0, value);
    this.#parts.push(out);
    return this;
  }

  /** A length-prefixed byte string; a JS string is written as UTF-8. */
  string(value: Uint8Array | string): this {
    const bytes = typeof value === "string" ? utf8(value) : value;
    this.uint32(bytes.length);
    this.#parts.push(bytes);
    return this;
  }

  /**
   * A non-negative multiple-precision integer given as unsigned big-endian bytes (as JWK and DER
   * carry them): leading zeros dropped, one zero byte added back when the top bit is set so it
   * does not read as negative, and zero encoded as the empty string.
   */
  mpint(unsigned: Uint8Array): this {
    let i = 0;
    while (i < unsigned.length && unsigned[i] === 0) i++;
    const magnitude = unsigned.subarray(i);
    if (magnitude.length > 0 && (magnitude[0]! & 0x80) !== 0) {
      return this.string(concatBytes(new Uint8Array([0]), magnitude));
    }
    return this.string(magnitude);
  }

  /** Raw bytes with no length prefix. */
  raw(bytes: Uint8Array): this {
    this.#parts.push(bytes);
    return this;
  }

  get length(): number {
    let n = 0;
    for (const part of this.#parts) n += part.length;
    return n;
  }

  bytes(): Uint8Array {
    return concatBytes(...this.#parts);
  }
}

/** Reads SSH wire values; every read throws a RangeError when the input is too short. */
export class SshReader {
  readonly #bytes: Uint8Array;
  readonly #view: DataView;
  #offset = 0;

  constructor(bytes: Uint8Array) {
    this.#bytes = bytes;
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  get remaining(): number {
    return this.#bytes.length - this.#offset;
  }

  #need(n: number): void {
    if (this.remaining < n) throw new RangeError("SSH wire data is truncated");
  }

  uint32(): number {
    this.#need(4);
    const value = this.#view.getUint32(this.#offset);
    this.#offset += 4;
    return value;
  }

  uint64(): bigint {
    this.#need(8);
    const value = this.#view.getBigUint64(this.#offset);
    this.#offset += 8;
    return value;
  }

  string(): Uint8Array {
    const length = this.uint32();
    return this.raw(length);
  }

  /** A string field decoded as UTF-8. */
  text(): string {
    return fromUtf8(this.string());
  }

  raw(length: number): Uint8Array {
    this.#need(length);
    const out = this.#bytes.subarray(this.#offset, this.#offset + length);
    this.#offset += length;
    return out;
  }
}
