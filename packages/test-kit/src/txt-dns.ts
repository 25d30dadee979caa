/**
 * A real DNS server on a loopback UDP port (dns2) answering TXT queries, and a node resolver
 * pointed at it: what domain verification reads in the tests.
 */
import { Resolver } from "node:dns/promises";
import dns2 from "dns2";

/** DNS response codes (RFC 1035 §4.1.1); dns2's type declarations leave out its RCODE table. */
const rcode = { SERVFAIL: 2, NXDOMAIN: 3 } as const;

/** A name's TXT records (each a list of strings), a server failure, or nothing (NXDOMAIN). */
export type TxtLookup = (name: string) => string[][] | "servfail" | undefined;

export interface TxtDnsServer {
  readonly resolver: Resolver;
  close(): Promise<void>;
}

/** Serves the TXT records `lookup` gives for each (lower-cased) name asked. */
export async function startTxtDnsServer(lookup: TxtLookup): Promise<TxtDnsServer> {
  const server = dns2.createServer({
    udp: true,
    handle: (request, send) => {
      const response = dns2.Packet.createResponseFromRequest(request);
      const [question] = request.questions;
      const records = lookup(question?.name.toLowerCase() ?? "");
      if (records === "servfail") response.header.rcode = rcode.SERVFAIL;
      else if (records === undefined || question === undefined) response.header.rcode = rcode.NXDOMAIN;
      else {
        for (const data of records) {
          response.answers.push({
            name: question.name,
            type: dns2.Packet.TYPE.TXT,
            class: dns2.Packet.CLASS.IN,
            ttl: 60,
            data,
          } as never);
        }
      }
      send(response);
    },
  });
  const addresses = await server.listen({ udp: { port: 0, address: "127.0.0.1" } });
  const resolver = new Resolver({ timeout: 1000, tries: 1 });
  resolver.setServers([`127.0.0.1:${addresses.udp?.port}`]);
  return {
    resolver,
    async close() {
      await server.close();
    },
  };
}
