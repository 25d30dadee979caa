import { describe, expect, it } from "vitest";
import { fold, fromBytes, likeContains, toBytes, toDate, toNumber } from "./mapping.js";
import { Mutex } from "./mutex.js";

describe("mapping", () => {
  it("reads pg's int8 strings and SQLite's numbers alike; refuses unsafe integers", () => {
    expect(toNumber("1709210096789")).toBe(1_709_210_096_789);
    expect(toNumber(42n)).toBe(42);
    expect(toDate("-1").getTime()).toBe(-1);
    expect(() => toNumber("9007199254740993")).toThrow(RangeError);
  });

  it("hands out plain Uint8Arrays that do not share the driver's buffer", () => {
    const driverBuffer = Buffer.from([1, 2, 3]);
    const bytes = toBytes(driverBuffer);
    expect(Object.getPrototypeOf(bytes)).toBe(Uint8Array.prototype);
    driverBuffer[0] = 9;
    expect(Array.from(bytes)).toEqual([1, 2, 3]);
    const view = new Uint8Array([7, 8, 9]).subarray(1);
    expect(Array.from(fromBytes(view))).toEqual([8, 9]);
  });

  it("escapes LIKE wildcards and the escape character itself", () => {
    expect(likeContains(fold("50%_OFF!"))).toBe("%50!%!_off!!%");
  });
});

describe("Mutex", () => {
  it("runs holders one at a time, in order, past failures", async () => {
    const mutex = new Mutex();
    const log: string[] = [];
    const step = (name: string, fail = false) =>
      mutex.run(async () => {
        log.push(`${name}:start`);
        await new Promise((r) => setTimeout(r, 5));
        log.push(`${name}:end`);
        if (fail) throw new Error(name);
      });
    const results = await Promise.allSettled([step("a"), step("b", true), step("c")]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(log).toEqual(["a:start", "a:end", "b:start", "b:end", "c:start", "c:end"]);
  });
});
