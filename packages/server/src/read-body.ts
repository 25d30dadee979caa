/**
 * Reads a REST request body as text, refusing to buffer more than the configured limit.
 *
 * @module
 */
import { InvalidArgumentError, ResourceExhaustedError } from "@wap/core";

/** The body is over the limit: answered `resource_exhausted` with HTTP 413 on REST paths. */
export class BodyTooLargeError extends ResourceExhaustedError {
  constructor(limitBytes: number) {
    super(`the request body is larger than the limit of ${limitBytes} bytes`, { reason: "BODY_TOO_LARGE" });
  }
}

/** A body in another format than the one the endpoint reads: answered with HTTP 415. */
export class UnsupportedMediaTypeError extends InvalidArgumentError {
  constructor(got: string, expected: string) {
    super(`send the request body as Content-Type: ${expected}: got ${got === "" ? "none" : got}`, {
      reason: "UNSUPPORTED_MEDIA_TYPE",
    });
  }
}

const jsonType = "application/json";

/**
 * A REST request body (JSON) as text. Any other Content-Type is refused, before the body is
 * read when its length is declared: an HTML form or a `text/plain` fetch from another site can
 * send neither the JSON type nor a body read as JSON.
 */
export async function readJsonBodyText(request: Request, limitBytes: number): Promise<string> {
  const type = request.headers.get("content-type")?.split(";", 1)[0]?.trim().toLowerCase() ?? "";
  const isJson = type === jsonType;
  const declared = request.headers.get("content-length");
  const announced =
    (declared !== null && declared.trim() !== "0") || request.headers.has("transfer-encoding");
  if (!isJson && announced) throw new UnsupportedMediaTypeError(type, jsonType);
  const text = await readBodyText(request, limitBytes);
  if (!isJson && text !== "") throw new UnsupportedMediaTypeError(type, jsonType);
  return text;
}

/** The body as UTF-8 text, empty when there is none. */
export async function readBodyText(request: Request, limitBytes: number): Promise<string> {
  const bytes = await readBodyBytes(request, limitBytes);
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new InvalidArgumentError("the request body is not valid UTF-8", { reason: "MALFORMED_BODY" });
  }
}

/** The body as bytes, refusing more than the limit (declared or sent); empty when there is none. */
export async function readBodyBytes(request: Request, limitBytes: number): Promise<Uint8Array> {
  const declared = Number(request.headers.get("content-length") ?? Number.NaN);
  if (declared > limitBytes) throw new BodyTooLargeError(limitBytes);
  if (!request.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limitBytes) {
      await reader.cancel().catch(() => undefined);
      throw new BodyTooLargeError(limitBytes);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}
