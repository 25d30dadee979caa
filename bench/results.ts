/**
 * What every benchmark hands to the report: its figures, each measured next to a baseline from
 * the same run where one makes sense, and the target it is held to.
 *
 * @module
 */

/** One measured number. */
export interface BenchFigure {
  readonly label: string;
  readonly value: number;
  /** e.g. `req/s`, `certificates/s`, `ms`, `MiB`, `rows/s`. */
  readonly unit: string;
}

/** A figure next to its baseline: `ratio` is subject / baseline. */
export interface BenchComparison {
  readonly subject: BenchFigure;
  readonly baseline: BenchFigure;
  readonly ratio: number;
}

/** A target a figure is held to, e.g. `>= 5000 certificates/s`. */
export interface BenchTarget {
  readonly figure: string;
  readonly comparison: ">=" | "<=";
  readonly value: number;
  readonly unit: string;
  readonly met: boolean;
}

/** A latency or throughput series for the plot (x in the series' own unit, e.g. seconds or N). */
export interface BenchSeries {
  readonly label: string;
  readonly xUnit: string;
  readonly yUnit: string;
  readonly points: readonly (readonly [number, number])[];
}

/** One benchmark's contribution to bench/REPORT.md. */
export interface BenchSection {
  readonly title: string;
  /** What was measured and how, in a sentence or two. */
  readonly method: string;
  readonly figures: readonly BenchFigure[];
  readonly comparisons: readonly BenchComparison[];
  readonly targets: readonly BenchTarget[];
  readonly series: readonly BenchSeries[];
  readonly notes: readonly string[];
}
