/**
 * A check that events trigger, run at most once every `minIntervalMs` and never twice at once:
 * a trigger during a check runs one more after it, triggers soon after one wait out the interval
 * and count once; a backstop runs it every `backstopMs` whatever happens. The access watch of a
 * stream and the watch of a daemon's live SSH logins both run on it.
 *
 * `run` handles its own errors (a rejection would be unhandled).
 *
 * @module
 */

export interface ThrottledCheck {
  /** Asks for a check: at once when the interval has passed since the last one, else after it. */
  schedule(): void;
  /** Checks now, unless one is running (then once more after it). */
  runNow(): void;
  /** No check runs after this; a running one finishes. */
  stop(): void;
  readonly stopped: boolean;
}

export function throttledCheck(
  run: () => Promise<void>,
  options: { readonly minIntervalMs: number; readonly backstopMs: number },
): ThrottledCheck {
  let stopped = false;
  let checking = false;
  let again = false;
  let lastCheck = 0;
  let delayed: NodeJS.Timeout | undefined;

  const check = async () => {
    if (stopped) return;
    if (checking) {
      again = true;
      return;
    }
    checking = true;
    lastCheck = Date.now();
    try {
      await run();
    } finally {
      checking = false;
    }
    if (again) {
      again = false;
      schedule();
    }
  };
  const schedule = () => {
    if (stopped || delayed !== undefined) return;
    const wait = Math.max(0, lastCheck + options.minIntervalMs - Date.now());
    delayed = setTimeout(() => {
      delayed = undefined;
      void check();
    }, wait);
    delayed.unref?.();
  };
  const backstop = setInterval(() => void check(), options.backstopMs);
  backstop.unref?.();

  return {
    schedule,
    runNow: () => void check(),
    stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(backstop);
      clearTimeout(delayed);
    },
    get stopped() {
      return stopped;
    },
  };
}
