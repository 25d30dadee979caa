/**
 * How to run this same `wap` again from elsewhere (ssh's `Match exec`), with the same Node
 * options: the node binary, its flags with preloaded modules resolved to absolute paths (they
 * would otherwise resolve against the caller's working directory), and this script.
 *
 * @module
 */
const preloadFlags = new Set(["--import", "--loader", "--experimental-loader", "--require", "-r"]);

function resolvedPreload(specifier: string): string {
  if (specifier.startsWith(".") || specifier.startsWith("/") || specifier.includes(":")) return specifier;
  try {
    return import.meta.resolve(specifier);
  } catch {
    return specifier;
  }
}

export function selfCommand(): string[] {
  const flags: string[] = [];
  const argv = process.execArgv;
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const inline = /^(--[a-z-]+)=(.*)$/.exec(flag);
    if (inline && preloadFlags.has(inline[1]!)) flags.push(`${inline[1]}=${resolvedPreload(inline[2]!)}`);
    else if (preloadFlags.has(flag) && i + 1 < argv.length) flags.push(flag, resolvedPreload(argv[++i]!));
    else flags.push(flag);
  }
  return [process.execPath, ...flags, process.argv[1]!];
}

/** POSIX shell quoting: every word in single quotes. */
export const shellQuote = (words: readonly string[]) =>
  words.map((w) => `'${w.replaceAll("'", `'\\''`)}'`).join(" ");
