import { InvalidArgumentError, ResourceExhaustedError } from "@wap/core";
import { describe, expect, it } from "vitest";
import { errorResponse, failureStatus, publicError, refusalResponse } from "./error-responses.js";
import type { AnswerNote } from "./errors.js";
import { createJsonLogger } from "./logger.js";
import { BodyTooLargeError, UnsupportedMediaTypeError } from "./read-body.js";

function capture() {
  const lines: string[] = [];
  return { lines, logger: createJsonLogger("info", (line) => lines.push(line)) };
}

describe("refusalResponse", () => {
  it("answers a platform error as a google.rpc.Status, never cached, with its code and reason noted", async () => {
    const { lines, logger } = capture();
    const note: AnswerNote = { requestId: "req-1" };
    const error = new InvalidArgumentError("name: must be 1 to 64 characters", {
      reason: "INVALID_ARGUMENT",
      violations: [{ field: "name", description: "must be 1 to 64 characters" }],
    });
    const response = refusalResponse(note, error, logger);
    expect(response.status).toBe(400);
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(await response.json()).toEqual({
      code: 3,
      message: "name: must be 1 to 64 characters",
      details: [
        {
          "@type": "type.googleapis.com/google.rpc.ErrorInfo",
          reason: "INVALID_ARGUMENT",
          domain: expect.any(String),
        },
        {
          "@type": "type.googleapis.com/google.rpc.BadRequest",
          fieldViolations: [{ field: "name", description: "must be 1 to 64 characters" }],
        },
      ],
    });
    expect(note).toMatchObject({ code: "invalid_argument", reason: "INVALID_ARGUMENT" });
    expect(lines).toEqual([]);
  });

  it("sends the error's own headers and the caller's, and takes a status the code does not give", () => {
    const { logger } = capture();
    const error = new ResourceExhaustedError("slow down", { headers: { "Retry-After": "3" } });
    const response = refusalResponse({ requestId: "r" }, error, logger, {
      status: 405,
      headers: { Allow: "GET" },
    });
    expect(response.status).toBe(405);
    expect(response.headers.get("retry-after")).toBe("3");
    expect(response.headers.get("allow")).toBe("GET");
  });

  it("answers an internal fault without its cause, logged once with the request id", async () => {
    const { lines, logger } = capture();
    const note: AnswerNote = { requestId: "req-9" };
    const response = refusalResponse(note, new Error("secret connection string"), logger);
    expect(response.status).toBe(500);
    const body = (await response.json()) as { code: number; message: string };
    expect(body.code).toBe(13);
    expect(body.message).toBe("internal error (request id req-9)");
    expect(JSON.stringify(body)).not.toContain("secret");
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: "error", requestId: "req-9" });
    expect(note.code).toBe("internal");
  });
});

describe("failureStatus", () => {
  it("gives a refused body HTTP's own statuses and everything else its code's", () => {
    const answer = publicError("invalid_argument", "x", "INVALID_ARGUMENT");
    expect(failureStatus(new BodyTooLargeError(10), answer)).toBe(413);
    expect(failureStatus(new UnsupportedMediaTypeError("text/plain", "application/json"), answer)).toBe(415);
    expect(failureStatus(new Error("x"), answer)).toBe(400);
  });
});

describe("errorResponse", () => {
  it("writes a public error made at the edge", async () => {
    const response = errorResponse(publicError("not_found", "no such thing", "NOT_FOUND"));
    expect(response.status).toBe(404);
    expect(((await response.json()) as { code: number }).code).toBe(5);
  });
});
