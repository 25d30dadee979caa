import { createRouterTransport } from "@connectrpc/connect";
import { platformServices } from "@wap/api";
import { describe, expect, it } from "vitest";
import { createServiceClients } from "./clients.js";

describe("createServiceClients", () => {
  it("has a typed client for every service and every method of the contract", () => {
    const clients = createServiceClients(createRouterTransport(() => {}));
    expect(Object.keys(clients)).toHaveLength(platformServices.length);
    const methods = Object.values(clients).flatMap((client) => Object.keys(client));
    const contract = platformServices.flatMap((service) => service.methods.map((method) => method.localName));
    expect(methods.sort()).toEqual(contract.sort());
    // The reference's 108 RPCs, plus any this server adds in the same style.
    expect(contract.length).toBeGreaterThanOrEqual(108);
  });
});
