import { describe, expect, it } from "vitest";
import { describeUserAgent } from "./user-agent";

describe("describeUserAgent", () => {
  it("names the browser, its major version and the system", () => {
    const cases: [string, string][] = [
      [
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
        "Chrome 131 on Linux",
      ],
      [
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.2903.86",
        "Edge 131 on Windows",
      ],
      [
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 14.7; rv:133.0) Gecko/20100101 Firefox/133.0",
        "Firefox 133 on macOS",
      ],
      [
        "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
        "Safari 18 on iOS",
      ],
      [
        "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
        "Chrome 131 on Android",
      ],
      ["curl/8.5.0", "curl 8"],
    ];
    for (const [ua, words] of cases) expect(describeUserAgent(ua), ua).toBe(words);
  });

  it("keeps a name that is not a User-Agent", () => {
    expect(describeUserAgent("ada-laptop")).toBe("ada-laptop");
    expect(describeUserAgent("web-1 (wap 0.1.0)")).toBe("web-1 (wap 0.1.0)");
  });
});
