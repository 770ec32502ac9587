// nextTask() (src/core/task.ts): a yield to the event loop that browsers do not
// clamp the way they clamp nested setTimeout(0). Its callers (idle(), the
// background pump, async iteration) rely on it resolving every waiter, in
// order, and on other tasks running in between.
import { afterEach, describe, expect, test, vi } from 'vitest';

afterEach(() => {
  vi.unstubAllGlobals();
  vi.resetModules();
});

async function inOrder(nextTask: () => Promise<void>): Promise<void> {
  const seen: number[] = [];
  await Promise.all(Array.from({ length: 100 }, (_, i) => nextTask().then(() => seen.push(i))));
  expect(seen).toEqual(Array.from({ length: 100 }, (_, i) => i));
}

async function letsATimerRun(nextTask: () => Promise<void>): Promise<void> {
  let fired = false;
  setTimeout(() => (fired = true), 0);
  // A loop that yields with nextTask() does not starve a timer.
  for (let i = 0; i < 10_000 && !fired; i++) await nextTask();
  expect(fired).toBe(true);
}

describe('nextTask', () => {
  test('with setImmediate (Node): every waiter resolves, in order, and timers still run', async () => {
    const { nextTask } = await import('../src/core/task.js');
    await inOrder(nextTask);
    await letsATimerRun(nextTask);
  });

  test('with a MessageChannel (browsers and workers): the same', async () => {
    vi.stubGlobal('setImmediate', undefined);
    const { nextTask } = await import('../src/core/task.js');
    await inOrder(nextTask);
    await letsATimerRun(nextTask);
  });

  test('with neither: setTimeout(0), the same', async () => {
    vi.stubGlobal('setImmediate', undefined);
    vi.stubGlobal('MessageChannel', undefined);
    const { nextTask } = await import('../src/core/task.js');
    await inOrder(nextTask);
    await letsATimerRun(nextTask);
  });
});
