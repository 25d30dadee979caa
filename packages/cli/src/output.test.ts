import { hasControlCharacters } from "@wap/ssh-wire/forms";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createOutput, printable, table } from "./output.js";

const anyText = fc.string({ unit: "binary", maxLength: 40 });

function captured(json: boolean) {
  const out = { stdout: "", stderr: "" };
  const output = createOutput(
    json,
    (t) => {
      out.stdout += t;
    },
    (t) => {
      out.stderr += t;
    },
  );
  return { out, output };
}

describe("what wap prints", () => {
  it("shows every control character as an escape; only the layout's line breaks pass", () => {
    expect(printable("a\u001b[2Jb\u009b\u202e\nc")).toBe("a\\x1b[2Jb\\x9b\\u{202e}\\x0ac");
    expect(printable("a\u001b\nc", { lines: true })).toBe("a\\x1b\nc");
    fc.assert(
      fc.property(anyText, (text) => {
        expect(hasControlCharacters(printable(text))).toBe(false);
        expect(hasControlCharacters(printable(text, { lines: true }).replaceAll("\n", ""))).toBe(false);
      }),
    );
  });

  it("keeps each table row on one line, its columns aligned as shown", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(anyText, anyText), { minLength: 1, maxLength: 5 }), (rows) => {
        const lines = table(["NAME", "ID"], rows).split("\n");
        expect(lines).toHaveLength(rows.length + 1);
        for (const line of lines) expect(hasControlCharacters(line)).toBe(false);
      }),
    );
  });

  it("escapes results and notes for people, and writes --json as exact JSON with no raw control character", () => {
    fc.assert(
      fc.property(anyText, (name) => {
        const human = captured(false);
        human.output.result({ name }, () => `Now using workspace ${name}.`);
        human.output.note(`warning: ${name}`);
        expect(hasControlCharacters(human.out.stdout.replaceAll("\n", ""))).toBe(false);
        expect(hasControlCharacters(human.out.stderr.replaceAll("\n", ""))).toBe(false);

        const machine = captured(true);
        machine.output.result({ name }, () => "");
        expect(JSON.parse(machine.out.stdout)).toEqual({ name });
        expect(hasControlCharacters(machine.out.stdout.replaceAll("\n", ""))).toBe(false);
      }),
    );
  });
});
