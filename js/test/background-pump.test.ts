// A worker's background pump (src/local/background-pump.ts) after writes:
// a step in the next task only when the engine has background work due
// (the engine's background_work_due), none after a write that leaves
// nothing to do; what is due is done without anyone calling idle().
import { expect, test } from 'vitest';
import { bytes, fresh } from './helpers.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('a write that leaves no background work due runs no step; work a write makes due is done without idle()', async () => {
  const db = await fresh({ writeBufferSize: 64 * 1024 });
  await db.idle();
  await sleep(10); // the step open scheduled
  const steps = () => db.statistics().background.steps;
  const before = steps();
  // Each write alone in a task, as a leader serves a page's puts: before,
  // each ran a step of its own (a task, a call into the engine that
  // found nothing to do).
  for (let i = 0; i < 100; i++) {
    db.put(`k${i}`, bytes('v'));
    await sleep(0);
  }
  expect(db.statistics().properties.backgroundWorkPending).toBe(0);
  expect(steps()).toBe(before);

  // Past the write buffer: flushes (and the compactions they call for) are
  // due, and done in the background.
  const value = bytes('x'.repeat(100));
  for (let i = 0; i < 5000; i++) db.put(`big${String(i).padStart(6, '0')}`, value);
  for (let i = 0; i < 2000 && db.statistics().properties.backgroundWorkPending === 1; i++) await sleep(5); // a watchdog, not a bound
  const p = db.statistics().properties;
  expect(p.backgroundWorkPending).toBe(0);
  expect(p.immutableMemtables).toBe(0);
  expect(p.filesPerLevel.reduce((a, n) => a + n, 0)).toBeGreaterThan(0);
  expect(steps()).toBeGreaterThan(before);
  for (let i = 0; i < 5000; i += 499) expect(db.get(`big${String(i).padStart(6, '0')}`)).toEqual(value);
});
