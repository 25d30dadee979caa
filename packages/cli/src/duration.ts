/**
 * Durations on the command line: `90s`, `5m`, `1h30m`, `2d`, or a number of seconds.
 *
 * @module
 */
const unitMs: Readonly<Record<string, number>> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** The longest duration accepted: a year, the longest certificate the server issues. */
export const maxDurationMs = 365 * unitMs.d!;

/** Milliseconds, or undefined when `text` is not a duration of at most a year. */
export function parseDuration(text: string): number | undefined {
  const trimmed = text.trim();
  if (/^\d{1,9}$/.test(trimmed)) return checked(Number(trimmed) * 1000);
  if (!/^(\d{1,9}[smhd])+$/.test(trimmed)) return undefined;
  let total = 0;
  for (const [, amount, unit] of trimmed.matchAll(/(\d+)([smhd])/g)) total += Number(amount) * unitMs[unit!]!;
  return checked(total);
}

function checked(ms: number): number | undefined {
  return ms > 0 && ms <= maxDurationMs ? ms : undefined;
}

/** `1h5m`, `45s`: the inverse of {@link parseDuration} for whole seconds. */
export function formatDuration(ms: number): string {
  let seconds = Math.max(0, Math.floor(ms / 1000));
  if (seconds === 0) return "0s";
  let out = "";
  for (const [unit, size] of [
    ["d", 86_400],
    ["h", 3_600],
    ["m", 60],
    ["s", 1],
  ] as const) {
    if (seconds >= size) {
      out += `${Math.floor(seconds / size)}${unit}`;
      seconds %= size;
    }
  }
  return out;
}
