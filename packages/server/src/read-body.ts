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

/** The body as UTF-8 text, empty when there is none. */
export async function readBodyText(request: Request, limitBytes: number): Promise<string> {
  const declared = Number(request.headers.get("content-length") ?? Number.NaN);
  if (declared > limitBytes) throw new BodyTooLargeError(limitBytes);
  if (!request.body) return "";
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
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(Buffer.concat(chunks));
  } catch {
    throw new InvalidArgumentError("the request body is not valid UTF-8", { reason: "MALFORMED_BODY" });
  }
}
