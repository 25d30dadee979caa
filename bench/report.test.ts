/**
 * The report's pure parts: the markdown holds every section, figure, ratio and target; the SVG
 * is a well-formed document with one bar per plotted figure, one line per series and labelled
 * axes; the latency histogram reads percentiles within its stated precision.
 */
import { describe, expect, it } from "vitest";
import { createLatencyHistogram } from "./histogram.js";
import { type BenchReport, formatNumber, formatRatio, reportMarkdown, reportSvg } from "./report.js";
import type { BenchSection } from "./results.js";

const rpc = { label: "GetCertificateAuthority: throughput", value: 8123.4, unit: "req/s" };
const bare = { label: "GET /healthz (baseline): throughput", value: 20_456, unit: "req/s" };
const signing = { label: "SignSSHCertificate end to end: throughput", value: 3210, unit: "certificates/s" };
const raw = { label: "raw crypto.sign Ed25519", value: 24_000, unit: "signatures/s" };
const rss = { label: "JSON export: peak RSS", value: 310, unit: "MiB" };
const naive = { label: "naive JSON.stringify: peak RSS", value: 1450, unit: "MiB" };

const sections: BenchSection[] = [
  {
    title: "Authenticated RPC against a bare route",
    method: "HTTP/2, 32 requests in flight.",
    figures: [bare, rpc, { label: "GetCertificateAuthority: latency p99", value: 9.87, unit: "ms" }],
    comparisons: [{ subject: rpc, baseline: bare, ratio: 0.397 }],
    targets: [
      {
        figure: "GetCertificateAuthority throughput / GET /healthz throughput",
        comparison: ">=",
        value: 0.5,
        unit: "×",
        met: false,
      },
    ],
    series: [
      {
        label: "GetCertificateAuthority",
        xUnit: "s",
        yUnit: "req/s",
        points: [
          [0.5, 7900],
          [1, 8200],
          [1.5, 8100],
        ],
      },
      {
        label: "GET /healthz",
        xUnit: "s",
        yUnit: "req/s",
        points: [
          [0.5, 20_000],
          [1, 20_900],
        ],
      },
      {
        label: "GetCertificateAuthority",
        xUnit: "percentile",
        yUnit: "ms",
        points: [
          [50, 3.1],
          [90, 6.2],
          [99, 9.87],
          [99.9, 15],
        ],
      },
    ],
    notes: ["Server CPU counts every thread | including GC."],
  },
  {
    title: "SSH certificate issuance",
    method: "SignSSHCertificate end to end.",
    figures: [signing, raw],
    comparisons: [{ subject: signing, baseline: raw, ratio: 0.134 }],
    targets: [
      {
        figure: signing.label,
        comparison: ">=",
        value: 5000,
        unit: "certificates/s",
        met: false,
      },
    ],
    series: [],
    notes: [],
  },
  {
    title: "Audit export (1,000,000 events)",
    method: "Core export <CSV & JSON>.",
    figures: [rss, naive],
    comparisons: [{ subject: rss, baseline: naive, ratio: 0.214 }],
    targets: [{ figure: rss.label, comparison: "<=", value: 512, unit: "MiB", met: true }],
    series: [],
    notes: ["Targets from the design."],
  },
];

const report: BenchReport = {
  date: "2026-11-21T12:00:00.000Z",
  machine: { cpuModel: "Test CPU @ 2.0GHz", cores: 2, memoryGiB: 7.7, node: "v20.20.2", os: "linux 6.1.0" },
  commit: "53c81aa (uncommitted changes)",
  load: {
    start: { raw: "3.52 2.10 1.05 3/412 9876", oneMinute: 3.52 },
    end: { raw: "4.01 2.80 1.30 2/415 9999", oneMinute: 4.01 },
  },
  settings: { BENCH_SECONDS: "3" },
  sections,
};

/**
 * Checks that `xml` is well-formed enough for any SVG reader: one root element, every tag closed
 * in order, attributes quoted, `&` only in entities. Returns the element names in document order.
 */
function parseXml(xml: string): string[] {
  const names: string[] = [];
  const open: string[] = [];
  const tag = /<(\/?)([a-zA-Z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>/y;
  let i = 0;
  let roots = 0;
  while (i < xml.length) {
    const lt = xml.indexOf("<", i);
    const textPart = lt < 0 ? xml.slice(i) : xml.slice(i, lt);
    if (/&(?!amp;|lt;|gt;|quot;|apos;|#\d+;)/.test(textPart)) throw new Error(`bare & in text near ${i}`);
    if (lt < 0) {
      if (textPart.trim() !== "") throw new Error("text after the root element");
      break;
    }
    if (open.length === 0 && textPart.trim() !== "") throw new Error("text outside the root element");
    tag.lastIndex = lt;
    const m = tag.exec(xml);
    if (!m) throw new Error(`malformed tag at ${lt}: ${xml.slice(lt, lt + 60)}`);
    const [, closing, name, attributes, selfClosing] = m;
    if (/&(?!amp;|lt;|gt;|quot;|apos;|#\d+;)/.test(attributes!))
      throw new Error(`bare & in attributes of ${name}`);
    if (closing) {
      const expected = open.pop();
      if (expected !== name) throw new Error(`</${name}> closes <${expected}>`);
    } else {
      if (open.length === 0 && ++roots > 1) throw new Error("more than one root element");
      names.push(name!);
      if (!selfClosing) open.push(name!);
    }
    i = tag.lastIndex;
  }
  if (open.length > 0) throw new Error(`unclosed <${open.join("> <")}>`);
  return names;
}

const count = (names: string[], name: string) => names.filter((n) => n === name).length;

/** A table row holding `cells` in order, whatever the padding of the columns. */
function row(...cells: string[]): RegExp {
  const literal = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`\\|\\s+${cells.map(literal).join("\\s+\\|\\s+")}\\s+\\|`);
}

describe("reportMarkdown", () => {
  const markdown = reportMarkdown(report);

  it("has the date, machine, commit, load and settings, and links the plot", () => {
    for (const fact of [
      report.date,
      "Test CPU @ 2.0GHz, 2 cores",
      "7.7 GiB",
      "v20.20.2",
      "linux 6.1.0",
      "`53c81aa (uncommitted changes)`",
      "3.52 2.10 1.05 3/412 9876",
      "4.01 2.80 1.30 2/415 9999",
      "BENCH_SECONDS=3",
      "](report.svg)",
    ]) {
      expect(markdown).toContain(fact);
    }
  });

  it("has every section, figure, ratio and target with its mark", () => {
    for (const section of sections) {
      expect(markdown).toContain(`## ${section.title}`);
      for (const figure of section.figures) {
        expect(markdown).toMatch(
          row(figure.label.replaceAll("|", "\\|"), formatNumber(figure.value), figure.unit),
        );
      }
      for (const c of section.comparisons) expect(markdown).toMatch(row(formatRatio(c.ratio)));
    }
    expect(markdown).toMatch(row("0.40×"));
    expect(markdown).toMatch(row(">= 5,000 certificates/s", "3,210 certificates/s", "✗"));
    expect(markdown).toMatch(row("<= 512 MiB", "310 MiB", "✓"));
    // The summary table lists every target once more.
    expect(markdown.match(/✗/g)).toHaveLength(4);
    expect(markdown.match(/✓/g)).toHaveLength(2);
    expect(markdown).toMatch(row("GetCertificateAuthority", "3.1", "6.2", "9.87", "15"));
  });

  it("says the machine was busy; lays tables out as biome formats them", () => {
    expect(markdown).toContain("The machine was busy with other work during the run");
    expect(markdown).toContain("every thread | including"); // a note is a list item, not a cell
    const tables = markdown.split("\n\n").filter((block) => block.startsWith("| "));
    expect(tables.length).toBeGreaterThan(5);
    for (const block of tables) {
      const lines = block.split("\n");
      // Every line of a table padded to the width of its header row.
      for (const line of lines) expect([...line].length, line).toBe([...lines[0]!].length);
      expect(lines.every((line) => line.startsWith("| ") && line.endsWith(" |"))).toBe(true);
    }
  });
});

describe("reportSvg", () => {
  const svg = reportSvg(sections);
  const names = parseXml(svg);

  it("is one well-formed svg document", () => {
    expect(names.slice(0, 2)).toEqual(["svg", "title"]);
    expect(svg).toMatch(
      /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" width="1000" height="\d+" viewBox="0 0 1000 \d+"/,
    );
  });

  it("draws a bar per rate next to its baseline, a bar per other ratio, a bar per percentile", () => {
    // 1 background + 2 rate comparisons x 2 bars + 1 other ratio + 3 percentiles + 2 legend swatches
    expect(count(names, "rect")).toBe(1 + 2 * 2 + 1 + 3 + 2);
    expect(count(names, "polyline")).toBe(2);
    expect(count(names, "circle")).toBe(3 + 2);
    for (const label of [
      "Throughput next to its baseline",
      "per second (log scale)",
      "ratio to baseline (log scale)",
      "Latency percentiles",
      "latency (ms)",
      "req/s over time",
      "time into the run (s)",
      "p99 9.87 ms",
      "8.12k req/s",
      "0.40×",
    ]) {
      expect(svg).toContain(`>${label}<`);
    }
  });

  it("escapes text and plots nothing it does not have", () => {
    const odd = reportSvg([{ ...sections[2]!, title: "A & <B>", comparisons: [], targets: [] }]);
    expect(parseXml(odd)).toEqual(["svg", "title", "rect", "text"]);
    expect(odd).toContain("No benchmark produced figures to plot.");
  });
});

describe("createLatencyHistogram", () => {
  it("reads percentiles within 1% of the exact ones, never above the maximum", () => {
    const h = createLatencyHistogram();
    const values = Array.from({ length: 10_000 }, (_, i) => 0.05 + (i % 1000) * 0.37);
    for (const v of values) h.record(v);
    const sorted = [...values].sort((a, b) => a - b);
    for (const p of [50, 90, 99, 99.9]) {
      const exact = sorted[Math.ceil((p / 100) * sorted.length) - 1]!;
      expect(Math.abs(h.percentile(p) - exact) / exact).toBeLessThanOrEqual(0.0101);
    }
    expect(h.percentile(100)).toBe(Math.max(...values));
    expect(h.count).toBe(10_000);
    expect(h.meanMs).toBeCloseTo(values.reduce((a, b) => a + b, 0) / values.length, 6);
    expect(createLatencyHistogram().percentile(50)).toBe(0);
  });
});
