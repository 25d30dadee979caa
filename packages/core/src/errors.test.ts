import { describe, expect, it } from "vitest";
import { InvalidArgumentError, isPlatformError, NotFoundError, PlatformError } from "./errors.js";

describe("PlatformError across copies of the module", () => {
  it("recognises another copy's errors by their brand, and each subclass by its name", async () => {
    // A query string makes the module runner load a second, separate instance of the module.
    const secondCopy = "./errors.js?second-copy";
    const other = (await import(/* @vite-ignore */ secondCopy)) as typeof import("./errors.js");
    expect(other.PlatformError).not.toBe(PlatformError);
    const foreign = new other.InvalidArgumentError("bad field");
    expect(isPlatformError(foreign)).toBe(true);
    expect(foreign instanceof PlatformError).toBe(true);
    expect(foreign instanceof InvalidArgumentError).toBe(true);
    expect(foreign instanceof NotFoundError).toBe(false);
    expect(new NotFoundError("gone") instanceof other.PlatformError).toBe(true);
  });

  it("refuses look-alikes that carry no brand", () => {
    const lookAlike = Object.assign(new Error("x"), {
      name: "InvalidArgumentError",
      code: "invalid_argument",
    });
    expect(isPlatformError(lookAlike)).toBe(false);
    expect(lookAlike instanceof InvalidArgumentError).toBe(false);
    expect(isPlatformError(null)).toBe(false);
    expect(isPlatformError("invalid_argument")).toBe(false);
    expect(new InvalidArgumentError("x") instanceof NotFoundError).toBe(false);
  });
});
