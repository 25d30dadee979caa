import { createServer, type Socket, connect as tcpConnect } from "node:net";
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

  it("keeps trying to listen again while its reconnections fail", async () => {
    // The listener reaches PostgreSQL through a relay that can refuse new connections.
    const target = new URL(url);
    let refusing = false;
    let refused = 0;
    const open = new Set<Socket>();
    const relay = createServer((inbound) => {
      if (refusing) {
        refused++;
        inbound.destroy();
        return;
      }
      const outbound = tcpConnect(Number(target.port || 5432), target.hostname);
      for (const socket of [inbound, outbound]) {
        open.add(socket);
        socket.on("error", () => socket.destroy());
        socket.on("close", () => open.delete(socket));
      }
      inbound.pipe(outbound).pipe(inbound);
    });
    await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
    try {
      const relayed = new URL(url);
      relayed.hostname = "127.0.0.1";
      relayed.port = String((relay.address() as { port: number }).port);
      relayed.searchParams.set("application_name", "wap_bus_relayed");
      const listening = await createPostgresEventBus({ connectionString: relayed.toString() });
      buses.push(listening);
      const publisher = await bus("wap_bus_e");
      const seen: EventPayload[] = [];
      await listening.subscribe("ping", (payload) => seen.push(payload));
      // The connection drops and the next three attempts (0.1, 0.2 and 0.4 s later) are refused.
      refusing = true;
      for (const socket of open) socket.destroy();
      await eventually(async () => refused >= 3);
      refusing = false;
      await eventually(async () => {
        await publisher.publish("ping", "after-three-refusals");
        return seen.length > 0;
      });
      expect(seen[0]).toBe("after-three-refusals");
    } finally {
      for (const socket of open) socket.destroy();
      relay.close();
    }
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
