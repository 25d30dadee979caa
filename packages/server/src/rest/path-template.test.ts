import { describe, expect, it } from "vitest";
import { compareSpecificity, matchSegments, parsePathTemplate } from "./path-template.js";

const eq = (raw: string, literal: string) => raw === literal;

describe("parsePathTemplate", () => {
  it("parses literals, variables and the verb", () => {
    const t = parsePathTemplate("/v1/workspaces/{workspace_id}/domains/{domain}:verify");
    expect(t.verb).toBe("verify");
    expect(t.segments.map((s) => s.kind)).toEqual(["literal", "literal", "single", "literal", "single"]);
    expect(t.variables).toEqual([
      { fieldPath: "workspace_id", start: 2, end: 3, multiSegment: false },
      { fieldPath: "domain", start: 4, end: 5, multiSegment: false },
    ]);
    expect(parsePathTemplate("/v1/audit:export")).toMatchObject({ verb: "export", segments: [{}, {}] });
  });

  it("parses patterned variables and wildcards", () => {
    const t = parsePathTemplate("/v1/{name=projects/*/files/**}");
    expect(t.segments.map((s) => s.kind)).toEqual(["literal", "literal", "single", "literal", "multi"]);
    expect(t.variables).toEqual([{ fieldPath: "name", start: 1, end: 5, multiSegment: true }]);
    expect(parsePathTemplate("/v1/{config.name}/*").variables[0]?.fieldPath).toBe("config.name");
  });

  it.each([
    "v1/x",
    "/",
    "/v1/",
    "/v1//x",
    "/v1/{a",
    "/v1/{a}{b}",
    "/v1/{a}/{a}",
    "/v1/{a b}",
    "/v1/**/x",
    "/v1/x:",
    "/v1/{a={b}}",
  ])("rejects %s", (source) => {
    expect(() => parsePathTemplate(source)).toThrow(/invalid http path template/);
  });
});

describe("matchSegments", () => {
  it("returns where each template segment starts", () => {
    const t = parsePathTemplate("/v1/{name=files/**}");
    expect(matchSegments(t, ["v1", "files", "a", "b"], eq)).toEqual([0, 1, 2, 4]);
    expect(matchSegments(t, ["v1", "files"], eq)).toEqual([0, 1, 2, 2]);
    expect(matchSegments(t, ["v1", "dirs", "a"], eq)).toBeUndefined();
  });

  it("never matches an empty segment with * or a literal", () => {
    const t = parsePathTemplate("/v1/x/{id}");
    expect(matchSegments(t, ["v1", "x", ""], eq)).toBeUndefined();
    expect(matchSegments(t, ["v1", "x", "a", "b"], eq)).toBeUndefined();
  });
});

describe("compareSpecificity", () => {
  const sorted = (...sources: string[]) =>
    sources
      .map(parsePathTemplate)
      .sort(compareSpecificity)
      .map((t) => t.source);

  it("puts literals before variables before **", () => {
    expect(sorted("/v1/t/{id}", "/v1/t/filters")).toEqual(["/v1/t/filters", "/v1/t/{id}"]);
    expect(sorted("/v1/{p=**}", "/v1/{a}/b", "/v1/{a}/{b}")).toEqual([
      "/v1/{a}/b",
      "/v1/{a}/{b}",
      "/v1/{p=**}",
    ]);
    expect(sorted("/v1/a/**", "/v1/a/b/**")).toEqual(["/v1/a/b/**", "/v1/a/**"]);
  });
});
