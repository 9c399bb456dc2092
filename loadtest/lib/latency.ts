/** Other tenants' checks while something else runs: their answer times, and how a sorted list of times reads. */

type Post = (path: string, body: unknown) => Promise<{ body: Record<string, unknown> }>;

/**
 * `inFlight` clients check `path` back to back for `seconds` (each answer must be ALLOWED); the answer times in ms,
 * sorted.
 */
export async function checkTimes(
  post: Post,
  path: string,
  check: unknown,
  inFlight: number,
  seconds: number,
): Promise<number[]> {
  const times: number[] = [];
  const until = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (performance.now() < until) {
        const started = performance.now();
        const r = await post(path, check);
        if (r.body.can !== "CHECK_RESULT_ALLOWED") throw new Error(JSON.stringify(r.body));
        times.push(performance.now() - started);
      }
    }),
  );
  return times.sort((a, b) => a - b);
}

/** The `p` quantile (0-1) of sorted times. */
export const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

/** `n=… p50=… ms p99=… ms max=… ms` of sorted times. */
export const latencySummary = (sorted: number[]): string =>
  `n=${sorted.length} p50=${percentile(sorted, 0.5).toFixed(1)} ms p99=${percentile(sorted, 0.99).toFixed(1)} ms max=${sorted.at(-1)!.toFixed(1)} ms`;
