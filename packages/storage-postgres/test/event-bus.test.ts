import type { EventBus } from "@wap/core";
import type { EventPayload } from "@wap/core/internal";
import { createPostgresEventBus, eventChannelOf } from "@wap/storage-postgres";
import { startTestPostgres, type TestPostgres } from "@wap/storage-postgres/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

let pgServer: TestPostgres;
let url: string;
const buses: EventBus[] = [];
beforeAll(async () => {
  pgServer = await startTestPostgres();
  url = await pgServer.freshSchema();
}, 120_000);
afterAll(async () => {
  await Promise.all(buses.map((bus) => bus.close()));
  await pgServer?.stop();
}, 60_000);

async function bus(applicationName: string) {
  const connection = new URL(url);
  connection.searchParams.set("application_name", applicationName);
  const created = await createPostgresEventBus({ connectionString: connection.toString() });
  buses.push(created);
  return created;
}

function nextEvent(target: EventBus, topic: string): Promise<EventPayload> {
  return new Promise((resolve) => {
    let stop = () => {};
    void target
      .subscribe(topic, (payload) => {
        stop();
        resolve(payload);
      })
      .then((unsubscribe) => {
        stop = unsubscribe;
      });
  });
}

async function eventually(check: () => Promise<boolean>, attempts = 100) {
  for (let i = 0; i < attempts; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("condition not reached");
}

describe("PostgreSQL event bus", () => {
  it("delivers an event published by one instance to subscribers on another", async () => {
    const a = await bus("wap_bus_a");
    const b = await bus("wap_bus_b");
    const received = nextEvent(b, "daemon:42");
    const other: EventPayload[] = [];
    await b.subscribe("daemon:43", (payload) => other.push(payload));
    await new Promise((resolve) => setTimeout(resolve, 20));
    await a.publish("daemon:42", { kind: "SYNC_REQUEST", n: 1 });
    expect(await received).toEqual({ kind: "SYNC_REQUEST", n: 1 });
    expect(other).toEqual([]);
  });

  it("listens again after its connection is killed", async () => {
    const a = await bus("wap_bus_c");
    const b = await bus("wap_bus_listener_d");
    await pgServer.admin((c) =>
      c.query("select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1", [
        "wap_bus_listener_d",
      ]),
    );
    const seen: EventPayload[] = [];
    await b.subscribe("ping", (payload) => seen.push(payload));
    // Publish until the reconnected listener hears one: delivery resumes without a restart.
    await eventually(async () => {
      await a.publish("ping", "after-reconnect");
      return seen.length > 0;
    });
    expect(seen[0]).toBe("after-reconnect");
  });

  it("keeps installations in different schemas of one database apart", async () => {
    const here = await bus("wap_bus_f");
    const elsewhere = await createPostgresEventBus({ connectionString: await pgServer.freshSchema() });
    buses.push(elsewhere);
    const heardElsewhere: EventPayload[] = [];
    await elsewhere.subscribe("workspace:1", (payload) => heardElsewhere.push(payload));
    const heardHere = nextEvent(here, "workspace:1");
    await here.publish("workspace:1", "only here");
    expect(await heardHere).toBe("only here");
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(heardElsewhere).toEqual([]);
    expect(eventChannelOf("public")).toBe("wap_events");
    expect(eventChannelOf("x".repeat(63)).length).toBeLessThanOrEqual(63);
  });

  it("refuses payloads larger than NOTIFY carries", async () => {
    const a = await bus("wap_bus_e");
    await expect(a.publish("big", "x".repeat(9000))).rejects.toThrow(RangeError);
  });
});
