import { describe, expect, it } from "vitest";
import { createInProcessEventBus, type EventPayload } from "./event-bus.js";

describe("in-process event bus", () => {
  it("delivers to subscribers of the topic only, until they unsubscribe", async () => {
    const bus = createInProcessEventBus();
    const seen: Array<[string, EventPayload]> = [];
    const stop = await bus.subscribe("daemon:1", (payload, topic) => seen.push([topic, payload]));
    await bus.subscribe("daemon:2", () => seen.push(["wrong", null]));
    await bus.publish("daemon:1", { kind: "SYNC_REQUEST" });
    await new Promise((resolve) => setTimeout(resolve, 0));
    stop();
    await bus.publish("daemon:1", { kind: "late" });
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(seen).toEqual([["daemon:1", { kind: "SYNC_REQUEST" }]]);
  });

  it("refuses events larger than any bus can carry", async () => {
    const bus = createInProcessEventBus();
    await expect(bus.publish("t", "x".repeat(8000))).rejects.toThrow(RangeError);
  });

  it("reports a failing handler without stopping the others", async () => {
    const errors: unknown[] = [];
    const bus = createInProcessEventBus({ onHandlerError: (error) => errors.push(error) });
    const seen: EventPayload[] = [];
    await bus.subscribe("t", () => {
      throw new Error("boom");
    });
    await bus.subscribe("t", (payload) => seen.push(payload));
    await bus.publish("t", 1);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(seen).toEqual([1]);
    expect(errors).toHaveLength(1);
  });
});
