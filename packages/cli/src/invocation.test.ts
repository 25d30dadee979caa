import { execFile } from "node:child_process";
import { promisify } from "node:util";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { shellQuote } from "./invocation.js";

const run = promisify(execFile);

describe("shellQuote", () => {
  it("hands every word to the command unchanged through a real sh", async () => {
    const word = fc.string({ unit: "binary", maxLength: 20 }).filter((w) => !w.includes("\0"));
    await fc.assert(
      fc.asyncProperty(fc.array(word, { minLength: 1, maxLength: 5 }), async (words) => {
        const { stdout } = await run("sh", ["-c", `printf '%s\\0' ${shellQuote(words)}`]);
        expect(stdout.split("\0").slice(0, -1)).toEqual(words);
      }),
      { numRuns: 10 },
    );
  });
});
