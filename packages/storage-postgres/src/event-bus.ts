/**
 * The event bus over PostgreSQL LISTEN/NOTIFY: every instance listens on one channel on a
 * dedicated connection and fans events out to its local subscribers. The listener reconnects
 * with backoff when the connection drops; events published while it is down are lost for this
 * instance (the bus is a nudge; state lives in tables).
 *
 * The channel is per schema, as the migrations are: several installations in one database (one
 * schema each) do not hear each other's events.
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { EventBus } from "@wap/core";
import { createSubscriberTable, type EventPayload, encodeEvent } from "@wap/core/internal";
import pg from "pg";

/** The channel of a schema's installation. Channel names are identifiers: at most 63 bytes. */
export function eventChannelOf(schema: string): string {
  if (schema === "public") return "wap_events";
  return `wap_events_${createHash("sha256").update(schema).digest("hex").slice(0, 16)}`;
}

export interface PostgresEventBusOptions {
  readonly connectionString: string;
  readonly onError?: (error: unknown) => void;
}

/** Connects the listener and returns the bus once LISTEN is in effect. */
export async function createPostgresEventBus(options: PostgresEventBusOptions): Promise<EventBus> {
  const report = options.onError ?? (() => undefined);
  const table = createSubscriberTable((error) => report(error));
  const publisher = new pg.Pool({
    connectionString: options.connectionString,
    max: 2,
    connectionTimeoutMillis: 10_000,
  });
  publisher.on("error", report);
  let listener: pg.Client | undefined;
  let closed = false;
  let retryDelay = 100;
  // Learnt on the first connection (the search_path of the connection string decides it).
  let channel: string | undefined;

  const connect = async (): Promise<void> => {
    const client = new pg.Client({
      connectionString: options.connectionString,
      connectionTimeoutMillis: 10_000,
      // A LISTEN connection is quiet: TCP keepalive notices a peer that vanished without a word.
      keepAlive: true,
    });
    client.on("notification", (message) => {
      if (message.channel !== channel || !message.payload) return;
      try {
        const { t, p } = JSON.parse(message.payload) as { t: string; p: EventPayload };
        table.deliver(t, p);
      } catch (error) {
        report(error);
      }
    });
    client.on("error", (error) => {
      report(error);
      scheduleReconnect(client);
    });
    client.on("end", () => scheduleReconnect(client));
    try {
      await client.connect();
      if (channel === undefined) {
        const { rows } = await client.query<{ schema: string | null }>("select current_schema() as schema");
        channel = eventChannelOf(rows[0]?.schema ?? "public");
      }
      await client.query(`LISTEN "${channel}"`);
    } catch (error) {
      // Not the listener yet: its "end" reconnects nothing; the caller retries.
      client.end().catch(() => undefined);
      throw error;
    }
    if (closed) {
      await client.end().catch(() => undefined);
      return;
    }
    listener = client;
    retryDelay = 100;
  };

  /** Connects again after a delay (doubling up to 5 s) until it succeeds or the bus closes. */
  const reconnectLater = () => {
    const delay = retryDelay;
    retryDelay = Math.min(retryDelay * 2, 5_000);
    setTimeout(() => {
      if (closed) return;
      connect().catch((error) => {
        report(error);
        reconnectLater();
      });
    }, delay).unref();
  };

  const scheduleReconnect = (client: pg.Client) => {
    if (closed || listener !== client) return;
    listener = undefined;
    client.end().catch(() => undefined);
    reconnectLater();
  };

  await connect();
  const listening = channel ?? "wap_events";
  return {
    async publish(topic, payload) {
      await publisher.query("SELECT pg_notify($1, $2)", [listening, encodeEvent(topic, payload)]);
    },
    async subscribe(topic, handler) {
      return table.add(topic, handler);
    },
    async close() {
      closed = true;
      table.clear();
      await Promise.allSettled([listener?.end(), publisher.end()]);
      listener = undefined;
    },
  };
}
