import { describe, expect, it } from "vitest";
import { clientAddress } from "./client-address.js";

describe("clientAddress", () => {
  it("uses the TCP peer unless proxies are trusted", () => {
    expect(clientAddress("10.0.0.1", "6.6.6.6", 0)).toBe("10.0.0.1");
    expect(clientAddress("::ffff:10.0.0.1", undefined, 0)).toBe("10.0.0.1");
  });

  it("takes the address the trusted proxies saw, not what the client claims", () => {
    // The client forged the first entry; our one proxy appended the real address.
    expect(clientAddress("10.0.0.1", "6.6.6.6, 203.0.113.9", 1)).toBe("203.0.113.9");
    expect(clientAddress("10.0.0.1", ["6.6.6.6", "203.0.113.9, 10.0.0.2"], 2)).toBe("203.0.113.9");
    expect(clientAddress("10.0.0.1", "garbage", 1)).toBe("10.0.0.1");
    expect(clientAddress("10.0.0.1", "203.0.113.9", 3)).toBe("10.0.0.1");
  });
});
