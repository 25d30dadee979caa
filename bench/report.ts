/**
 * bench/REPORT.md and bench/report.svg from the sections of one `pnpm bench` run.
 *
 * `reportMarkdown` and `reportSvg` are pure (sections in, text out); `writeReport` adds the
 * facts of the machine and writes both files. The plot is hand-built SVG:
 *
 * - throughput next to its same-run baseline: a pair of bars per comparison of rates, on one
 *   logarithmic "per second" axis (the rates span several orders of magnitude);
 * - every other comparison (latency, memory) as its ratio to the baseline, on a logarithmic
 *   axis with a line at 1×;
 * - latency percentiles, grouped bars (p50, p90, p99) per benchmark, in ms;
 * - each other series (throughput over time, ...) as lines, one chart per pair of units.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { availableParallelism, cpus, release, totalmem } from "node:os";
import { join } from "node:path";
import type { BenchComparison, BenchFigure, BenchSection, BenchSeries, BenchTarget } from "./results.js";

// --- what a report holds -------------------------------------------------------------------------

export interface MachineFacts {
  readonly cpuModel: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly node: string;
  readonly os: string;
}

/** `/proc/loadavg` as read: 1, 5 and 15 minute averages, runnable/total tasks, last pid. */
export interface LoadSample {
  readonly raw: string;
  readonly oneMinute: number;
}

export interface BenchReport {
  /** ISO 8601, UTC. */
  readonly date: string;
  readonly machine: MachineFacts;
  /** e.g. `53c81aa` or `53c81aa (uncommitted changes)`; empty when unknown. */
  readonly commit: string;
  readonly load: { readonly start: LoadSample; readonly end: LoadSample };
  /** The BENCH_* settings of the run, as set. */
  readonly settings: Readonly<Record<string, string>>;
  readonly sections: readonly BenchSection[];
  /** Benchmarks asked for that did not run, and why. */
  readonly skipped?: readonly string[];
}

// --- numbers -------------------------------------------------------------------------------------

/** A number as the report prints it: thousands separated, few decimals for small values. */
export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  const abs = Math.abs(value);
  const digits = abs >= 100 || Number.isInteger(value) ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : 3;
  return value.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

/** A ratio as the report prints it, e.g. `0.42×`. */
export function formatRatio(ratio: number): string {
  const abs = Math.abs(ratio);
  return `${ratio.toFixed(abs >= 10 ? 1 : abs >= 0.1 ? 2 : 3)}×`;
}

/** A short number for axis ticks and bar labels: 950, 1.2k, 35k, 1.5M. */
export function formatShort(value: number): string {
  const abs = Math.abs(value);
  const trim = (n: number) => String(Number(n.toPrecision(3)));
  if (abs >= 1e6) return `${trim(value / 1e6)}M`;
  if (abs >= 1e3) return `${trim(value / 1e3)}k`;
  if (abs >= 1 || value === 0) return trim(value);
  return String(Number(value.toPrecision(2)));
}

const withUnit = (f: Pick<BenchFigure, "value" | "unit">) => `${formatNumber(f.value)} ${f.unit}`;

/** The figure a target names, if the section has one of that label. */
function measuredFor(section: BenchSection, target: BenchTarget): BenchFigure | undefined {
  return section.figures.find((f) => f.label === target.figure);
}

/** True when the machine was busy with other work during the run. */
export function machineWasBusy(report: Pick<BenchReport, "load" | "machine">): boolean {
  const peak = Math.max(report.load.start.oneMinute, report.load.end.oneMinute);
  return peak >= report.machine.cores * 0.25;
}

// --- markdown ------------------------------------------------------------------------------------

/** Text for a markdown table cell: no line breaks, pipes escaped. */
const cell = (text: string) => text.replaceAll("\n", " ").replaceAll("|", "\\|");

/**
 * A markdown table laid out as biome formats one (every column padded to one width, aligned as
 * its rule says), so that REPORT.md passes `pnpm lint` as written. `align` holds each column's
 * rule: `---` (left, the default), `---:` (right) or `:-:` (centred).
 */
function table(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  align: string[] = [],
): string {
  const cells = [header, ...rows].map((r) => header.map((_, i) => cell(r[i] ?? "")));
  const length = (s: string) => [...s].length;
  const widths = header.map((_, i) => Math.max(3, ...cells.map((r) => length(r[i]!))));
  const kind = (i: number) => (align[i] === "---:" ? "right" : align[i] === ":-:" ? "center" : "left");
  const pad = (s: string, i: number) => {
    const gap = widths[i]! - length(s);
    if (kind(i) === "right") return " ".repeat(gap) + s;
    if (kind(i) === "center")
      return " ".repeat(Math.floor(gap / 2)) + s + " ".repeat(gap - Math.floor(gap / 2));
    return s + " ".repeat(gap);
  };
  const rule = widths.map((w, i) =>
    kind(i) === "right"
      ? `${"-".repeat(w - 1)}:`
      : kind(i) === "center"
        ? `:${"-".repeat(w - 2)}:`
        : "-".repeat(w),
  );
  const line = (r: readonly string[]) => `| ${r.map(pad).join(" | ")} |`;
  return [line(cells[0]!), `| ${rule.join(" | ")} |`, ...cells.slice(1).map(line)].join("\n");
}

const targetText = (t: BenchTarget) => `${t.comparison} ${formatNumber(t.value)} ${t.unit}`;
const mark = (met: boolean) => (met ? "✓" : "✗");

function sectionMarkdown(section: BenchSection): string {
  const parts = [`## ${section.title}`, section.method];
  parts.push(
    table(
      ["figure", "value", "unit"],
      section.figures.map((f) => [f.label, formatNumber(f.value), f.unit]),
      ["---", "---:", "---"],
    ),
  );
  if (section.comparisons.length > 0) {
    parts.push(
      "**Next to the baseline measured in the same run** (ratio = subject / baseline)",
      table(
        ["subject", "baseline", "ratio"],
        section.comparisons.map((c) => [
          `${c.subject.label}: ${withUnit(c.subject)}`,
          `${c.baseline.label}: ${withUnit(c.baseline)}`,
          formatRatio(c.ratio),
        ]),
        ["---", "---", "---:"],
      ),
    );
  }
  if (section.targets.length > 0) {
    parts.push(
      "**Targets**",
      table(
        ["figure", "target", "measured", "met"],
        section.targets.map((t) => {
          const measured = measuredFor(section, t);
          return [t.figure, targetText(t), measured ? withUnit(measured) : "see above", mark(t.met)];
        }),
        ["---", "---", "---:", ":-:"],
      ),
    );
  }
  const percentiles = section.series.filter((s) => s.xUnit === "percentile");
  if (percentiles.length > 0) {
    const xs = [...new Set(percentiles.flatMap((s) => s.points.map(([x]) => x)))].sort((a, b) => a - b);
    parts.push(
      "**Latency by percentile** (ms)",
      table(
        ["benchmark", ...xs.map((x) => `p${x}`)],
        percentiles.map((s) => [
          s.label,
          ...xs.map((x) => {
            const point = s.points.find(([px]) => px === x);
            return point ? formatNumber(point[1]) : "";
          }),
        ]),
        ["---", ...xs.map(() => "---:")],
      ),
    );
  }
  const others = section.series.filter((s) => s.xUnit !== "percentile" && s.points.length > 0);
  if (others.length > 0) {
    parts.push(
      "**Series** (plotted in report.svg)",
      table(
        ["series", "points", "min", "mean", "max"],
        others.map((s) => {
          const ys = s.points.map(([, y]) => y);
          const mean = ys.reduce((a, b) => a + b, 0) / ys.length;
          const unit = ` ${s.yUnit}`;
          return [
            `${s.label} (${s.yUnit} by ${s.xUnit})`,
            String(ys.length),
            formatNumber(Math.min(...ys)) + unit,
            formatNumber(mean) + unit,
            formatNumber(Math.max(...ys)) + unit,
          ];
        }),
        ["---", "---:", "---:", "---:", "---:"],
      ),
    );
  }
  if (section.notes.length > 0) parts.push(section.notes.map((n) => `- ${n}`).join("\n"));
  return parts.join("\n\n");
}

/** The whole of bench/REPORT.md. */
export function reportMarkdown(report: BenchReport, svgFile = "report.svg"): string {
  const { machine, load } = report;
  const settings = Object.entries(report.settings)
    .map(([k, v]) => `${k}=${v}`)
    .join(", ");
  const allTargets = report.sections.flatMap((s) => s.targets.map((t) => ({ section: s, target: t })));
  const parts = [
    "# Benchmark report",
    `Written by \`pnpm bench\` on ${report.date}${report.commit ? ` at commit \`${report.commit}\`` : ""}.`,
    table(
      ["machine", ""],
      [
        ["CPU", `${machine.cpuModel}, ${machine.cores} cores`],
        ["memory", `${formatNumber(machine.memoryGiB)} GiB`],
        ["Node", machine.node],
        ["OS", machine.os],
        ["load average at start (/proc/loadavg)", load.start.raw],
        ["load average at end (/proc/loadavg)", load.end.raw],
        ["settings", settings || "defaults"],
      ],
    ),
    `![Throughput next to its baseline, ratios to baselines, latency percentiles and throughput over time](${svgFile})`,
  ];
  if (allTargets.length > 0) {
    parts.push(
      "## Targets",
      table(
        ["benchmark", "figure", "target", "measured", "met"],
        allTargets.map(({ section, target }) => {
          const measured = measuredFor(section, target);
          return [
            section.title,
            target.figure,
            targetText(target),
            measured ? withUnit(measured) : "see the section",
            mark(target.met),
          ];
        }),
        ["---", "---", "---", "---:", ":-:"],
      ),
    );
  }
  for (const section of report.sections) parts.push(sectionMarkdown(section));
  const notes = [
    ...(machineWasBusy(report)
      ? [
          `The machine was busy with other work during the run (1-minute load average ${formatNumber(load.start.oneMinute)} at the start and ${formatNumber(load.end.oneMinute)} at the end, on ${machine.cores} cores): absolute figures are lower and noisier than on an idle machine. Ratios are measured against baselines of the same run, under the same load, and are the figures to compare.`,
        ]
      : []),
    ...(report.skipped ?? []),
    "Each ratio is subject / baseline: above 1× the subject is larger (faster for rates, slower for latencies, heavier for memory).",
  ];
  parts.push("## Notes", notes.map((n) => `- ${n}`).join("\n"));
  return `${parts.join("\n\n")}\n`;
}

// --- svg -----------------------------------------------------------------------------------------

const escapeXml = (text: string) =>
  text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll('"', "&quot;");

type Attributes = Readonly<Record<string, string | number>>;

function el(name: string, attributes: Attributes, content?: string): string {
  const attrs = Object.entries(attributes)
    .map(([k, v]) => ` ${k}="${escapeXml(typeof v === "number" ? String(Number(v.toFixed(2))) : v)}"`)
    .join("");
  return content === undefined ? `<${name}${attrs}/>` : `<${name}${attrs}>${content}</${name}>`;
}

const text = (x: number, y: number, content: string, attributes: Attributes = {}) =>
  el("text", { x, y, ...attributes }, escapeXml(content));

/** `label` cut to `max` characters (about what fits beside a plot at 11-12 px), marked when cut. */
const fit = (label: string, max: number) =>
  label.length <= max ? label : `${label.slice(0, max - 1).trimEnd()}…`;

const width = 1000;
const margin = { left: 300, right: 210 };
const plotWidth = width - margin.left - margin.right;
const colors = {
  subject: "#2563eb",
  baseline: "#9ca3af",
  axis: "#374151",
  grid: "#e5e7eb",
  text: "#111827",
  muted: "#4b5563",
  percentiles: ["#93c5fd", "#3b82f6", "#1e3a8a", "#0f172a"],
  lines: ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4b5563"],
};

interface Panel {
  readonly height: number;
  readonly body: string;
}

/** A logarithmic scale over whole decades covering `values` (and 1, with `withOne`). */
function logScale(values: readonly number[], from: number, to: number, withOne = false) {
  const positive = values.filter((v) => v > 0);
  const domain = withOne ? [...positive, 1] : positive.length > 0 ? positive : [1];
  let lo = 10 ** Math.floor(Math.log10(Math.min(...domain)));
  let hi = 10 ** Math.ceil(Math.log10(Math.max(...domain)));
  if (hi <= lo) hi = lo * 10;
  if (!Number.isFinite(lo) || lo <= 0) lo = 1;
  const span = Math.log10(hi) - Math.log10(lo);
  const ticks: number[] = [];
  for (let t = lo; t <= hi * 1.0001; t *= 10) ticks.push(t);
  return {
    at: (v: number) => from + ((Math.log10(Math.max(v, lo)) - Math.log10(lo)) / span) * (to - from),
    ticks,
  };
}

/** A linear scale from 0 to a round number at or above the largest value, with about 5 ticks. */
function linearScale(max: number, from: number, to: number) {
  const rough = Math.max(max, 1e-9) / 5;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= rough) ?? magnitude * 10;
  const top = Math.max(step, Math.ceil(max / step) * step);
  const ticks: number[] = [];
  for (let t = 0; t <= top * 1.0001; t += step) ticks.push(t);
  return { at: (v: number) => from + (Math.max(0, v) / top) * (to - from), ticks };
}

function panelTitle(title: string, subtitle: string): string {
  return (
    text(20, 28, title, { "font-size": 17, "font-weight": "bold", fill: colors.text }) +
    text(20, 48, subtitle, { "font-size": 12, fill: colors.muted })
  );
}

/** Vertical grid lines and labels of a horizontal axis at `y`, and its title below. */
function horizontalAxis(
  ticks: readonly number[],
  at: (v: number) => number,
  top: number,
  y: number,
  title: string,
  label: (v: number) => string,
): string {
  let out = "";
  for (const t of ticks) {
    const x = at(t);
    out += el("line", { x1: x, y1: top, x2: x, y2: y, stroke: colors.grid });
    out += text(x, y + 16, label(t), { "text-anchor": "middle", "font-size": 11, fill: colors.axis });
  }
  out += el("line", { x1: margin.left, y1: y, x2: width - margin.right, y2: y, stroke: colors.axis });
  out += text(margin.left + plotWidth / 2, y + 34, title, {
    "text-anchor": "middle",
    "font-size": 12,
    fill: colors.axis,
  });
  return out;
}

/** Where the rows of a bar panel start, below its title. */
const barsTop = 64;

/**
 * The frame of a bar panel: its title, then `rows` rows of `rowHeight` from {@link barsTop}
 * down to `bottom`, where the value axis of `scale` stands.
 */
function barPanelFrame(frame: {
  rows: number;
  rowHeight: number;
  scale: { ticks: readonly number[]; at: (v: number) => number };
  title: string;
  subtitle: string;
  axisTitle: string;
  label: (v: number) => string;
}): { bottom: number; body: string } {
  const bottom = barsTop + frame.rows * frame.rowHeight;
  const axis = horizontalAxis(
    frame.scale.ticks,
    frame.scale.at,
    barsTop - 6,
    bottom,
    frame.axisTitle,
    frame.label,
  );
  return { bottom, body: panelTitle(frame.title, frame.subtitle) + axis };
}

/** A bar from the value axis's start to `end`, at least 1 px wide. */
const barFromAxis = (y: number, end: number, height: number, fill: string) =>
  el("rect", { x: margin.left, y, width: Math.max(1, end - margin.left), height, fill });

const isRate = (unit: string) => unit.endsWith("/s");

/** Throughput comparisons: subject and baseline bars on one logarithmic per-second axis. */
function throughputPanel(rows: readonly { section: string; c: BenchComparison }[]): Panel | null {
  if (rows.length === 0) return null;
  const rowHeight = 54;
  const scale = logScale(
    rows.flatMap(({ c }) => [c.subject.value, c.baseline.value]),
    margin.left,
    width - margin.right,
  );
  let { bottom, body } = barPanelFrame({
    rows: rows.length,
    rowHeight,
    scale,
    title: "Throughput next to its baseline",
    subtitle: "Each benchmark (blue) above the baseline of the same run (grey); logarithmic axis.",
    axisTitle: "per second (log scale)",
    label: (t) => `${formatShort(t)}/s`,
  });
  rows.forEach(({ c }, i) => {
    const y = barsTop + i * rowHeight;
    body += text(margin.left - 10, y + 16, fit(c.subject.label, 44), {
      "text-anchor": "end",
      "font-size": 12,
      fill: colors.text,
    });
    body += text(margin.left - 10, y + 36, fit(`vs ${c.baseline.label}`, 46), {
      "text-anchor": "end",
      "font-size": 11,
      fill: colors.muted,
    });
    for (const [k, f] of [
      [0, c.subject],
      [1, c.baseline],
    ] as const) {
      const barY = y + 4 + k * 20;
      const end = scale.at(f.value);
      body += barFromAxis(barY, end, 16, k === 0 ? colors.subject : colors.baseline);
      body += text(end + 6, barY + 12, `${formatShort(f.value)} ${f.unit}`, {
        "font-size": 11,
        fill: colors.text,
      });
    }
    body += text(width - 16, y + 26, formatRatio(c.ratio), {
      "text-anchor": "end",
      "font-size": 13,
      "font-weight": "bold",
      fill: colors.text,
    });
  });
  return { height: bottom + 50, body };
}

/** Every other comparison as its ratio to the baseline, on a logarithmic axis with a line at 1×. */
function ratioPanel(rows: readonly { section: string; c: BenchComparison }[]): Panel | null {
  if (rows.length === 0) return null;
  const rowHeight = 34;
  const scale = logScale(
    rows.map(({ c }) => Math.abs(c.ratio)),
    margin.left,
    width - margin.right,
    true,
  );
  let { bottom, body } = barPanelFrame({
    rows: rows.length,
    rowHeight,
    scale,
    title: "Other figures next to their baseline",
    subtitle: "Ratio = benchmark / baseline of the same run; logarithmic axis, 1× marked.",
    axisTitle: "ratio to baseline (log scale)",
    label: (t) => formatRatio(t),
  });
  const one = scale.at(1);
  body += el("line", {
    x1: one,
    y1: barsTop - 6,
    x2: one,
    y2: bottom,
    stroke: colors.axis,
    "stroke-dasharray": "4 3",
  });
  rows.forEach(({ c }, i) => {
    const y = barsTop + i * rowHeight;
    const x = scale.at(Math.abs(c.ratio));
    body += text(margin.left - 10, y + 17, fit(`${c.subject.label} / ${c.baseline.label}`, 46), {
      "text-anchor": "end",
      "font-size": 11,
      fill: colors.text,
    });
    body += el("rect", {
      x: Math.min(one, x),
      y: y + 5,
      width: Math.max(1, Math.abs(x - one)),
      height: 18,
      fill: colors.subject,
    });
    body += text(
      width - 20,
      y + 19,
      `${formatRatio(c.ratio)} (${formatShort(c.subject.value)} vs ${formatShort(c.baseline.value)} ${c.baseline.unit})`,
      {
        "text-anchor": "end",
        "font-size": 11,
        fill: colors.text,
      },
    );
  });
  return { height: bottom + 50, body };
}

/** Latency percentiles: one group of bars per benchmark (p50, p90, p99 where measured). */
function latencyPanel(series: readonly BenchSeries[]): Panel | null {
  const wanted = [50, 90, 99];
  const groups = series
    .map((s) => ({
      label: s.label,
      bars: wanted.flatMap((p) => {
        const point = s.points.find(([x]) => x === p);
        return point ? [{ p, ms: point[1] }] : [];
      }),
    }))
    .filter((g) => g.bars.length > 0);
  if (groups.length === 0) return null;
  const rowHeight = 22 * wanted.length + 16;
  const scale = linearScale(
    Math.max(...groups.flatMap((g) => g.bars.map((b) => b.ms))),
    margin.left,
    width - margin.right,
  );
  let { bottom, body } = barPanelFrame({
    rows: groups.length,
    rowHeight,
    scale,
    title: "Latency percentiles",
    subtitle: "Time to answer, per request, at the load of each benchmark (ms).",
    axisTitle: "latency (ms)",
    label: (t) => `${formatShort(t)} ms`,
  });
  groups.forEach((g, i) => {
    const y = barsTop + i * rowHeight;
    body += text(margin.left - 10, y + 14 + (g.bars.length - 1) * 11, fit(g.label, 44), {
      "text-anchor": "end",
      "font-size": 12,
      fill: colors.text,
    });
    g.bars.forEach((b, k) => {
      const barY = y + 4 + k * 22;
      const end = scale.at(b.ms);
      body += barFromAxis(barY, end, 18, colors.percentiles[k] ?? colors.subject);
      body += text(end + 6, barY + 13, `p${b.p} ${formatNumber(b.ms)} ms`, {
        "font-size": 11,
        fill: colors.text,
      });
    });
  });
  return { height: bottom + 50, body };
}

/** Series of one pair of units as lines on shared linear axes, with a legend. */
function linePanel(series: readonly BenchSeries[]): Panel {
  const { xUnit, yUnit } = series[0]!;
  const top = 64;
  const plotHeight = 240;
  const bottom = top + plotHeight;
  const points = series.flatMap((s) => s.points);
  const x = linearScale(Math.max(...points.map(([px]) => px)), margin.left, width - margin.right);
  const y = linearScale(Math.max(...points.map(([, py]) => py)), bottom, top);
  const title = xUnit === "s" ? `${yUnit} over time` : `${yUnit} by ${xUnit}`;
  let body = panelTitle(title, `Each series as sampled during its run (${yUnit} against ${xUnit}).`);
  body += horizontalAxis(
    x.ticks,
    x.at,
    top,
    bottom,
    xUnit === "s" ? "time into the run (s)" : xUnit,
    formatShort,
  );
  for (const t of y.ticks) {
    const py = y.at(t);
    body += el("line", { x1: margin.left, y1: py, x2: width - margin.right, y2: py, stroke: colors.grid });
    body += text(margin.left - 8, py + 4, formatShort(t), {
      "text-anchor": "end",
      "font-size": 11,
      fill: colors.axis,
    });
  }
  body += el("line", { x1: margin.left, y1: top, x2: margin.left, y2: bottom, stroke: colors.axis });
  body += text(margin.left - 60, top + plotHeight / 2, yUnit, {
    "text-anchor": "middle",
    "font-size": 12,
    fill: colors.axis,
    transform: `rotate(-90 ${margin.left - 60} ${top + plotHeight / 2})`,
  });
  series.forEach((s, i) => {
    const color = colors.lines[i % colors.lines.length]!;
    const path = s.points.map(([px, py]) => `${x.at(px).toFixed(1)},${y.at(py).toFixed(1)}`).join(" ");
    body += el("polyline", { points: path, fill: "none", stroke: color, "stroke-width": 2 });
    for (const [px, py] of s.points)
      body += el("circle", { cx: x.at(px), cy: y.at(py), r: 2.5, fill: color });
    const ly = top + 10 + i * 20;
    body += el("rect", { x: width - margin.right + 14, y: ly - 9, width: 12, height: 12, fill: color });
    body += text(width - margin.right + 32, ly + 1, fit(s.label, 30), {
      "font-size": 11,
      fill: colors.text,
    });
  });
  return { height: bottom + 50, body };
}

/** The plot of a run: a standalone SVG document. */
export function reportSvg(sections: readonly BenchSection[]): string {
  const comparisons = sections.flatMap((s) => s.comparisons.map((c) => ({ section: s.title, c })));
  const series = sections.flatMap((s) => s.series).filter((s) => s.points.length > 0);
  const byUnits = new Map<string, BenchSeries[]>();
  for (const s of series.filter((s) => s.xUnit !== "percentile")) {
    const key = `${s.xUnit}\u0000${s.yUnit}`;
    byUnits.set(key, [...(byUnits.get(key) ?? []), s]);
  }
  const panels = [
    throughputPanel(comparisons.filter(({ c }) => isRate(c.subject.unit) && isRate(c.baseline.unit))),
    ratioPanel(comparisons.filter(({ c }) => !(isRate(c.subject.unit) && isRate(c.baseline.unit)))),
    latencyPanel(series.filter((s) => s.xUnit === "percentile" && s.yUnit === "ms")),
    ...[...byUnits.values()].map(linePanel),
  ].filter((p): p is Panel => p !== null);
  let y = 0;
  let body = "";
  for (const panel of panels) {
    body += el("g", { transform: `translate(0 ${y})` }, panel.body);
    y += panel.height;
  }
  if (panels.length === 0) {
    body = text(20, 40, "No benchmark produced figures to plot.", { "font-size": 14, fill: colors.text });
    y = 80;
  }
  const height = Math.max(80, Math.ceil(y));
  return `${el(
    "svg",
    {
      xmlns: "http://www.w3.org/2000/svg",
      width,
      height,
      viewBox: `0 0 ${width} ${height}`,
      "font-family": "DejaVu Sans, Helvetica, Arial, sans-serif",
    },
    el("title", {}, "Benchmarks next to their baselines: throughput, ratios, latency percentiles, series") +
      el("rect", { x: 0, y: 0, width, height, fill: "#ffffff" }) +
      body,
  )}\n`;
}

// --- the machine and the files --------------------------------------------------------------------

export function describeMachine(): MachineFacts {
  const cpu = cpus()[0];
  return {
    cpuModel: cpu?.model.trim() || "unknown CPU",
    cores: availableParallelism(),
    memoryGiB: Number((totalmem() / 2 ** 30).toFixed(1)),
    node: process.version,
    os: `${process.platform} ${release()}`,
  };
}

/** `/proc/loadavg` now (empty elsewhere). */
export function sampleLoad(): LoadSample {
  try {
    const raw = readFileSync("/proc/loadavg", "utf8").trim();
    return { raw, oneMinute: Number(raw.split(" ")[0]) };
  } catch {
    return { raw: "unavailable", oneMinute: 0 };
  }
}

/** The short commit hash, marked when the working tree has changes; empty outside git. */
export function describeCommit(cwd: string): string {
  try {
    const git = (...args: string[]) => execFileSync("git", args, { cwd, encoding: "utf8" }).trim();
    const hash = git("rev-parse", "--short", "HEAD");
    return git("status", "--porcelain", "--untracked-files=no") === ""
      ? hash
      : `${hash} (uncommitted changes)`;
  } catch {
    return "";
  }
}

/** Writes REPORT.md and report.svg into `dir`; returns their paths. */
export async function writeReport(
  report: BenchReport,
  dir: string,
): Promise<{ markdown: string; svg: string }> {
  const markdown = join(dir, "REPORT.md");
  const svg = join(dir, "report.svg");
  await writeFile(svg, reportSvg(report.sections));
  await writeFile(markdown, reportMarkdown(report, "report.svg"));
  return { markdown, svg };
}

// --- the console -----------------------------------------------------------------------------------

/** A section as plain text for the console. */
export function sectionText(section: BenchSection): string {
  const lines = [`\n${section.title}`, `  ${section.method}`, ""];
  const labelWidth = Math.max(...section.figures.map((f) => f.label.length), 10);
  for (const f of section.figures) lines.push(`  ${f.label.padEnd(labelWidth)}  ${withUnit(f)}`);
  for (const c of section.comparisons) {
    lines.push(`  ratio ${c.subject.label} / ${c.baseline.label}: ${formatRatio(c.ratio)}`);
  }
  for (const t of section.targets)
    lines.push(`  target ${t.figure} ${targetText(t)}: ${t.met ? "met" : "NOT met"}`);
  for (const n of section.notes) lines.push(`  note: ${n}`);
  return lines.join("\n");
}
