import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { generatedDocs } from "../src/platform/generated-docs.js";

describe("the generated documents", () => {
  it.each(generatedDocs.map((doc) => [doc.path, doc] as const))(
    "%s is what its table says now (run `pnpm docs:generate` after changing it)",
    (path, doc) => {
      expect(readFileSync(new URL(`../../../${path}`, import.meta.url), "utf8")).toBe(doc.render());
    },
  );
});
