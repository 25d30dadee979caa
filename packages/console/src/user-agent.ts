/**
 * A browser's User-Agent string in words ("Chrome 131 on Linux"), for the list of devices. A
 * name that is not a User-Agent (a CLI's host name) stays as it is.
 */
const browsers: readonly (readonly [RegExp, string])[] = [
  [/\bEdg(?:e|A|iOS)?\/(\d+)/, "Edge"],
  [/\bOPR\/(\d+)/, "Opera"],
  [/\bFirefox\/(\d+)/, "Firefox"],
  [/\bHeadlessChrome\/(\d+)/, "Headless Chrome"],
  [/\bChromium\/(\d+)/, "Chromium"],
  [/\bChrome\/(\d+)/, "Chrome"],
  [/\bVersion\/(\d+)[^ ]* (?:Mobile\/\S+ )?Safari\//, "Safari"],
  [/^curl\/(\d+)/, "curl"],
];

const systems: readonly (readonly [RegExp, string])[] = [
  [/\bAndroid\b/, "Android"],
  [/\b(?:iPhone|iPad|iPod)\b/, "iOS"],
  [/\bCrOS\b/, "ChromeOS"],
  [/\bWindows\b/, "Windows"],
  [/\bMac OS X\b|\bMacintosh\b/, "macOS"],
  [/\bLinux\b|\bX11\b/, "Linux"],
];

export function describeUserAgent(name: string): string {
  if (!/^[A-Za-z][\w.-]*\/\d/.test(name)) return name;
  const browser = browsers.find(([pattern]) => pattern.test(name));
  const system = systems.find(([pattern]) => pattern.test(name))?.[1];
  const what = browser ? `${browser[1]} ${browser[0].exec(name)?.[1] ?? ""}`.trim() : "A browser";
  return system ? `${what} on ${system}` : what;
}
