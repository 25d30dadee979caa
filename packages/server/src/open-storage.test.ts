import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { sqliteFileOf } from "./open-storage.js";

describe("sqliteFileOf", () => {
  it("defaults to wap.db in the data directory", () => {
    expect(sqliteFileOf(undefined, "/var/lib/wap")).toBe("/var/lib/wap/wap.db");
  });

  it("accepts sqlite: URLs and plain paths", () => {
    expect(sqliteFileOf("sqlite:/srv/wap.db", "x")).toBe("/srv/wap.db");
    expect(sqliteFileOf("sqlite://relative.db", "x")).toBe(resolve("relative.db"));
    expect(sqliteFileOf("sqlite::memory:", "x")).toBe(":memory:");
    expect(sqliteFileOf("/srv/other.db", "x")).toBe("/srv/other.db");
  });

  it("refuses PostgreSQL for now, and unknown schemes, without echoing passwords", () => {
    expect(() => sqliteFileOf("postgres://u:secret@db/wap", "x")).toThrow(
      /PostgreSQL storage is not available/,
    );
    expect(() => sqliteFileOf("mysql://u:secret@db/wap", "x")).toThrow(/unsupported database URL scheme/);
    expect(() => sqliteFileOf("mysql://u:secret@db/wap", "x")).not.toThrow(/secret/);
  });
});
