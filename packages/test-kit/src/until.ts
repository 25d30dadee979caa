/** Polls until `check` holds, every `intervalMs` (the test's own timeout bounds the wait). */
export async function until(check: () => Promise<boolean> | boolean, intervalMs = 20): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, intervalMs));
}
