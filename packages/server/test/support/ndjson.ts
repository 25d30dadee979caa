/**
 * Reads a newline-delimited JSON stream (REST server streams) line by line, as `curl -N` would.
 */

export interface NdjsonReader {
  readonly status: number;
  readonly headers: Headers;
  /** The next line, parsed; `undefined` once the stream has ended. */
  next(timeoutMs?: number): Promise<unknown>;
  /** Goes away, as a client closing the connection. */
  close(): void;
}

/** Opens `GET <baseUrl><path>`; resolves once the response headers have arrived. */
export async function openNdjson(
  baseUrl: string,
  path: string,
  options: { token?: string } = {},
): Promise<NdjsonReader> {
  const controller = new AbortController();
  const headers: Record<string, string> = {};
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  const res = await fetch(`${baseUrl}${path}`, { headers, signal: controller.signal });
  const reader = res.body?.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  let ended = false;
  const readLine = async (): Promise<unknown> => {
    for (;;) {
      const newline = buffered.indexOf("\n");
      if (newline >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        return JSON.parse(line);
      }
      if (ended || reader === undefined) return undefined;
      const chunk = await reader.read();
      if (chunk.done) ended = true;
      else buffered += decoder.decode(chunk.value, { stream: true });
    }
  };
  return {
    status: res.status,
    headers: res.headers,
    next(timeoutMs = 10_000) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no line within ${timeoutMs} ms`)), timeoutMs);
      });
      return Promise.race([readLine(), timeout]).finally(() => clearTimeout(timer));
    },
    close: () => controller.abort(),
  };
}
