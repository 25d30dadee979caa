import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { auditActions } from "./actions.js";

function coreSources(): string {
  const root = new URL("../", import.meta.url);
  return (readdirSync(root, { recursive: true }) as string[])
    .filter((file) => file.endsWith(".ts") && !file.endsWith(".test.ts") && !file.startsWith("testing/"))
    .filter((file) => file !== "audit/actions.ts")
    .map((file) => readFileSync(new URL(file, root), "utf8"))
    .join("\n");
}

describe("the audit actions", () => {
  it("are listed once each, in order", () => {
    expect([...auditActions].sort()).toEqual([...auditActions]);
    expect(new Set(auditActions).size).toBe(auditActions.length);
  });

  it("are each recorded by the core, as a literal or from a template of its prefix", () => {
    const text = coreSources();
    const unrecorded = auditActions.filter((action) => {
      const prefix = action.slice(0, action.lastIndexOf("."));
      return !text.includes(`"${action}"`) && !text.includes(`\`${prefix}.\${`);
    });
    expect(unrecorded).toEqual([]);
  });
});
