import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, expectTypeOf, it } from "vitest";
import { type ErrorCode, errorCodes, genericReason, NotFoundError, PlatformError } from "../errors.js";
import { declaredReasons, type ErrorReason, type ReasonFor, reasonDeclaration } from "./registry.js";

/** The non-test sources of the packages that raise platform errors. */
function sources(): Array<{ file: string; text: string }> {
  return ["core", "server"].flatMap((pkg) => {
    const root = new URL(`../../../${pkg}/src/`, import.meta.url);
    return (readdirSync(root, { recursive: true }) as string[])
      .filter(
        (file) => file.endsWith(".ts") && !file.endsWith(".test.ts") && !file.includes("error-reasons/"),
      )
      .map((file) => ({ file: `${pkg}/src/${file}`, text: readFileSync(new URL(file, root), "utf8") }));
  });
}

describe("the error reason registry", () => {
  const declared = declaredReasons();

  it("declares each reason in one area only", () => {
    const seen = new Map<string, string>();
    const twice = declared.filter((entry) => {
      const first = seen.get(entry.reason);
      seen.set(entry.reason, entry.area);
      return first !== undefined;
    });
    expect(twice.map((entry) => entry.reason)).toEqual([]);
  });

  it("names reasons in capitals and describes each in one sentence line", () => {
    for (const entry of declared) {
      expect(entry.reason).toMatch(/^[A-Z][A-Z0-9_]*$/);
      expect(entry.codes.length).toBeGreaterThan(0);
      expect(entry.codes.every((code) => (errorCodes as readonly string[]).includes(code))).toBe(true);
      expect(entry.description).toMatch(/^[A-Z`].*\.$/);
      expect(entry.description).not.toContain("\n");
    }
  });

  it("declares the reason of every code raised without one (the code in capitals), with that code", () => {
    for (const code of errorCodes) {
      expect(reasonDeclaration(code.toUpperCase())?.codes).toEqual([code]);
      expect(genericReason(code)).toBe(code.toUpperCase());
    }
    expectTypeOf<Uppercase<ErrorCode>>().toExtend<ErrorReason>();
  });

  it("gives errors the reason they were raised with, or the generic one", () => {
    expect(new NotFoundError("x", { reason: "TARGET_NOT_FOUND" }).reason).toBe("TARGET_NOT_FOUND");
    expect(new NotFoundError("x").reason).toBe("NOT_FOUND");
    expect(new PlatformError("aborted", "x").reason).toBe("ABORTED");
    expectTypeOf<"TARGET_NOT_FOUND">().toExtend<ReasonFor<"not_found">>();
    expectTypeOf<"TARGET_NAME_TAKEN">().not.toExtend<ReasonFor<"not_found">>();
  });

  it("holds every reason the code raises, with the code it is raised with", () => {
    // The constructors' types refuse undeclared reasons; this also catches a reason that got past
    // them (a cast, a reason handed on as a string).
    const raised = sources().flatMap(({ file, text }) =>
      [...text.matchAll(/\breason: "([A-Z][A-Z0-9_]*)"/g)].map((match) => ({
        file,
        reason: match[1] as string,
      })),
    );
    expect(raised.length).toBeGreaterThan(100);
    expect(raised.filter(({ reason }) => reasonDeclaration(reason) === undefined)).toEqual([]);
  });

  it("declares no reason that nothing raises", () => {
    const text = sources()
      .map((source) => source.text)
      .join("\n");
    const unused = declared.filter(
      (entry) => entry.area !== "generic" && !text.includes(`"${entry.reason}"`),
    );
    expect(unused.map((entry) => entry.reason)).toEqual([]);
  });
});
