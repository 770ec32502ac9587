// Driving tests/pages/harness.html: workers that run named scenarios.
import { test, type Page } from '@playwright/test';

export type Outcome<T> = { ok: true; value: T } | { ok: false; code: string; message: string };

type Silt = {
  newWorker(): number;
  run(id: number, scenario: string, args: unknown): Promise<Outcome<unknown>>;
  start(id: number, scenario: string, args: unknown): void;
  progress(id: number): Record<string, unknown>;
  terminate(id: number): void;
};
declare global {
  interface Window {
    silt: Silt;
  }
}

export async function openHarness(page: Page): Promise<void> {
  await page.goto('/test-pages/harness.html');
  await page.waitForFunction(() => document.body.dataset.state === 'ready');
}

export function newWorker(page: Page): Promise<number> {
  return page.evaluate(() => window.silt.newWorker());
}

/** Runs a scenario in a worker and returns its value (throws on failure). */
export async function run<T>(page: Page, worker: number, scenario: string, args: unknown): Promise<T> {
  const r = await page.evaluate(([w, s, a]) => window.silt.run(w as number, s as string, a), [worker, scenario, args] as const);
  if (!r.ok) throw new Error(`scenario ${scenario} failed: ${r.code}: ${r.message}`);
  return r.value as T;
}

/** Runs a scenario in a fresh worker. */
export async function runFresh<T>(page: Page, scenario: string, args: unknown): Promise<T> {
  return run<T>(page, await newWorker(page), scenario, args);
}

/** The seed of this run: SILT_SEED, or a new one (printed, so a failure can be replayed). */
export function seedFor(what: string): number {
  const seed = process.env.SILT_SEED ? Number(process.env.SILT_SEED) : Math.floor(Math.random() * 2 ** 32);
  console.log(`${what}: seed ${seed} (replay with SILT_SEED=${seed})`);
  test.info().annotations.push({ type: 'seed', description: String(seed) });
  return seed;
}

export { schedule } from '../reliability.mjs';

/**
 * The bound for something that must happen "at once", not after a wait on
 * a holder or on a timer, that holds on a slow or loaded machine: the same
 * work without the wait, measured in the same run (`baselineMs`), three
 * times over, plus the timers the path runs by design (`timersMs`) and
 * 1.5 s. A fixed bound (3 s) failed only where the machine was slow; this
 * one still fails on a wait for a holder (which never ends here) or on a
 * timer the path should not run.
 */
export function promptBound(baselineMs: number, timersMs = 0): number {
  return 3 * baselineMs + timersMs + 1_500;
}

/** How long `f` took, in ms, beside its value. */
export async function timed<T>(f: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const t0 = Date.now();
  const value = await f();
  return { value, ms: Date.now() - t0 };
}
