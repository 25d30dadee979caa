import { describe, expect, it } from "vitest";
import * as api from "./index.js";

describe("platformServices", () => {
  it("names every service generated from the protos, once", () => {
    const generated = Object.values(api)
      .filter(
        (value) =>
          typeof value === "object" && value !== null && (value as { kind?: string }).kind === "service",
      )
      .map((service) => (service as { typeName: string }).typeName)
      .filter((name) => name.startsWith("platform.v1."))
      .sort();
    const listed = api.platformServices.map((service) => service.typeName);
    expect(new Set(listed).size).toBe(listed.length);
    expect([...listed].sort()).toEqual(generated);
  });
});
