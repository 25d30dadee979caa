import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { databaseTargetOf } from "./open-storage.js";

const sqlite = (file: string) => ({ kind: "sqlite", file });

describe("databaseTargetOf", () => {
  it("defaults to wap.db in the data directory", () => {
    expect(databaseTargetOf(undefined, "/var/lib/wap")).toEqual(sqlite("/var/lib/wap/wap.db"));
  });

  it("accepts sqlite: URLs and plain paths", () => {
    expect(databaseTargetOf("sqlite:/srv/wap.db", "x")).toEqual(sqlite("/srv/wap.db"));
    expect(databaseTargetOf("sqlite://relative.db", "x")).toEqual(sqlite(resolve("relative.db")));
    expect(databaseTargetOf("sqlite::memory:", "x")).toEqual(sqlite(":memory:"));
    expect(databaseTargetOf("/srv/other.db", "x")).toEqual(sqlite("/srv/other.db"));
  });

  it("accepts postgres:// and postgresql:// URLs", () => {
    for (const url of ["postgres://wap:pw@db:5432/wap", "postgresql://db/wap?sslmode=require"]) {
      expect(databaseTargetOf(url, "x")).toEqual({ kind: "postgres", url });
    }
  });

  it("refuses unknown schemes and malformed URLs without echoing passwords", () => {
    expect(() => databaseTargetOf("mysql://u:secret@db/wap", "x")).toThrow(/unsupported database URL scheme/);
    expect(() => databaseTargetOf("mysql://u:secret@db/wap", "x")).not.toThrow(/secret/);
    expect(() => databaseTargetOf("postgres://u:secret@db:port/wap", "x")).toThrow(/not a valid URL/);
    expect(() => databaseTargetOf("postgres://u:secret@db:port/wap", "x")).not.toThrow(/secret/);
  });
});
