import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeBase64, isGrpcWebText } from "./grpc-web-text.js";

async function* chunksOf(parts: string[]): AsyncGenerator<Buffer> {
  for (const part of parts) yield Buffer.from(part, "latin1");
}

async function decodeAll(parts: string[]): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const bytes of decodeBase64(chunksOf(parts)[Symbol.asyncIterator]())) out.push(bytes);
  return Buffer.concat(out);
}

/** `text` cut at the given positions. */
function cut(text: string, at: number[]): string[] {
  const points = [...new Set(at.map((p) => p % (text.length + 1)))].sort((a, b) => a - b);
  return [0, ...points].map((from, i) => text.slice(from, points[i] ?? text.length));
}

describe("gRPC-Web text bodies", () => {
  it("decode to the bytes of every chunk, each padded on its own, however the text is split", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 6 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        async (chunks, at) => {
          const text = chunks.map((c) => Buffer.from(c).toString("base64")).join("");
          expect(await decodeAll(cut(text, at))).toEqual(Buffer.concat(chunks));
        },
      ),
    );
  });

  it("refuse text that is not base64 in whole 4-character groups", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc
          .string({ minLength: 1, maxLength: 12 })
          .filter(
            (s) =>
              !/^(?:[A-Za-z0-9+/]{4}|[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)*$/.test(
                s.replace(/[\t\n\r ]/g, ""),
              ),
          ),
        async (text) => {
          await expect(decodeAll([text])).rejects.toThrow(/base64 in 4-character groups/);
        },
      ),
    );
  });

  it("are recognised by their content type, with or without +proto and parameters", () => {
    expect(isGrpcWebText("application/grpc-web-text")).toBe(true);
    expect(isGrpcWebText("application/grpc-web-text+proto; charset=utf-8")).toBe(true);
    expect(isGrpcWebText("application/grpc-web+proto")).toBe(false);
    expect(isGrpcWebText("application/grpc-web-text+json")).toBe(false);
    expect(isGrpcWebText(undefined)).toBe(false);
  });
});
