import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CastReader } from "./ssh-watch-socket.js";
import { terminalSizeBounds } from "./terminal-frames.js";

const { min, max } = terminalSizeBounds;

/** The frames `cast` gives when its bytes arrive cut at `cuts` (output frames as `o:<text>`). */
function framesOf(cast: Buffer, cuts: number[]): string[] {
  const frames: string[] = [];
  const reader = new CastReader((frame) => {
    frames.push(typeof frame === "string" ? frame : `o:${frame.toString()}`);
  });
  let at = 0;
  for (const cut of [...new Set(cuts)].sort((a, b) => a - b)) {
    reader.push(cast.subarray(at, cut));
    at = cut;
  }
  reader.push(cast.subarray(at));
  return frames;
}

const castOf = (width: number, height: number, events: [string, string][]) =>
  Buffer.from(
    [
      JSON.stringify({ version: 2, width, height, timestamp: 1 }),
      ...events.map(([code, text], i) => JSON.stringify([i / 10, code, text])),
      "",
    ].join("\n"),
  );

describe("CastReader", () => {
  it("gives the same frames however the recording's bytes are cut into appends", () => {
    fc.assert(
      fc.property(
        fc.integer({ min, max }),
        fc.integer({ min, max }),
        fc.array(fc.tuple(fc.constantFrom("o", "m"), fc.string({ unit: "grapheme", minLength: 1 })), {
          maxLength: 8,
        }),
        fc.array(fc.nat(), { maxLength: 6 }),
        (width, height, events, cuts) => {
          const cast = castOf(width, height, events);
          const whole = framesOf(cast, []);
          expect(whole[0]).toBe(JSON.stringify({ type: "resize", cols: width, rows: height }));
          expect(whole).toHaveLength(events.length + 1);
          expect(
            framesOf(
              cast,
              cuts.map((c) => c % (cast.length + 1)),
            ),
          ).toEqual(whole);
        },
      ),
    );
  });

  it("passes on sizes within the terminal's bounds only, and ignores lines that are not events", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -5, max: max + 5 }),
        fc.integer({ min: -5, max: max + 5 }),
        (cols, rows) => {
          const frames: (string | Buffer)[] = [];
          const reader = new CastReader((frame) => frames.push(frame));
          reader.push(Buffer.from(`{"version":2}\n[0.1,"r","${cols}x${rows}"]\nnot json\n[1,"x","?"]\n`));
          const inBounds = cols >= min && cols <= max && rows >= min && rows <= max;
          expect(frames).toEqual(inBounds ? [JSON.stringify({ type: "resize", cols, rows })] : []);
        },
      ),
    );
  });
});
