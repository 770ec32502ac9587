// Long-running async iterators on real OPFS (RocksDB PR 13354): with an explicit
// snapshot and autoRefresh, a scan that sees writes, flushes and full
// compactions between its awaits yields exactly the snapshot's entries and
// lets the OPFS files of old versions be deleted while it is still going;
// without autoRefresh those files stay until the iterator ends. And how
// iterators end: break, return(), release(), close().
import { expect, test } from '@playwright/test';
import { openHarness, runFresh } from './harness.js';

type Held = {
  at: number;
  oldLeft: number;
  tables: number;
  currentTables: number;
  pinned: { memtables: number; tables: number };
  removedOpen: number;
  dataBytes: number;
};
type Scan = {
  yielded: number;
  expectedCount: number;
  firstMismatch: number;
  mismatch: unknown;
  roundsDone: number;
  rounds: { at: number; filesPerLevel: number[]; tables: number }[];
  atStart: { tables: string[]; dataBytes: number };
  oldGoneAt: number;
  held: Held;
  after: Omit<Held, 'at' | 'tables' | 'currentTables'>;
  released: boolean;
  refreshes: number;
  pinnedResults: number;
};

const N = 10_000;
const ROUNDS = 3;

test.beforeEach(async ({ page }) => {
  await openHarness(page);
});

for (const reverse of [false, true]) {
  test(`an autoRefresh scan with a snapshot (${reverse ? 'reverse' : 'forward'}): exactly the snapshot's entries, and the old version's OPFS files deleted mid-scan`, async ({
    page,
  }) => {
    test.setTimeout(60_000);
    const r = await runFresh<Scan>(page, 'refreshingScan', { name: `scan-on-${reverse}`, n: N, rounds: ROUNDS, autoRefresh: true, reverse });
    // Every entry of the snapshot, in order, with its value as of the snapshot.
    expect(r.mismatch).toBeNull();
    expect(r.firstMismatch).toBe(-1);
    expect(r.yielded).toBe(r.expectedCount);
    expect(r.expectedCount).toBeGreaterThan(N * 0.99);
    // The writes and compactions happened mid-scan, in several levels.
    expect(r.roundsDone).toBe(ROUNDS);
    expect(r.rounds.map((x) => x.at).every((at) => at > 0 && at < r.yielded)).toBe(true);
    expect(r.atStart.tables.length).toBeGreaterThanOrEqual(2); // L0 and the last level, and the memtable
    // While the scan was still going, every table file of the start had
    // been deleted from the pool (headers freed on OPFS) ...
    expect(r.oldGoneAt).toBeGreaterThan(r.rounds[0]!.at);
    expect(r.oldGoneAt).toBeLessThan(r.yielded);
    // ... and, after the last round, the scan held nothing obsolete at all.
    expect(r.held.at).toBeLessThan(r.yielded);
    expect(r.held.oldLeft).toBe(0);
    expect(r.held.tables).toBe(r.held.currentTables); // on OPFS, only the current version's tables
    expect(r.held.pinned).toEqual({ memtables: 0, tables: 0 });
    expect(r.held.removedOpen).toBe(0);
    expect(r.refreshes).toBeGreaterThanOrEqual(ROUNDS);
    expect(r.released).toBe(true);
    expect(r.after.pinned).toEqual({ memtables: 0, tables: 0 });
  });
}

test('control: without autoRefresh the old files stay for as long as the scan, and go when it is broken off', async ({ page }) => {
  test.setTimeout(60_000);
  const breakAt = Math.floor(N * 0.9);
  const r = await runFresh<Scan>(page, 'refreshingScan', { name: 'scan-off', n: N, rounds: ROUNDS, autoRefresh: false, reverse: false, breakAt });
  expect(r.mismatch).toBeNull();
  expect(r.yielded).toBe(breakAt);
  expect(r.roundsDone).toBe(ROUNDS);
  expect(r.refreshes).toBe(0);
  // Mid-scan, after three full compactions: every file of the start is
  // still there, and so are the bytes of the old versions.
  expect(r.oldGoneAt).toBe(-1);
  expect(r.held.at).toBeLessThan(breakAt);
  expect(r.held.oldLeft).toBe(r.atStart.tables.length);
  expect(r.held.tables).toBeGreaterThan(r.held.currentTables);
  expect(r.held.pinned.tables).toBeGreaterThan(0);
  expect(r.held.pinned.memtables).toBeGreaterThan(0);
  // break released the iterator; the next background step deleted them.
  expect(r.released).toBe(true);
  expect(r.after.oldLeft).toBe(0);
  expect(r.after.pinned).toEqual({ memtables: 0, tables: 0 });
  expect(r.after.removedOpen).toBe(0);
  expect(r.after.dataBytes).toBeLessThan(r.held.dataBytes);
});

test('break, return() and release() let go of everything the iterator held', async ({ page }) => {
  test.setTimeout(60_000);
  type End = {
    during: { pinned: { memtables: number; tables: number }; tables: number };
    after: { pinned: { memtables: number; tables: number }; tables: number };
  };
  const r = await runFresh<{
    break: End & { released: boolean; next: boolean };
    return: End & { released: boolean; result: unknown; next: boolean };
    release: End & { code: string };
  }>(page, 'iteratorEnds', { name: 'ends' });
  for (const end of [r.break, r.return, r.release]) {
    expect(end.during.pinned.tables).toBeGreaterThan(0);
    expect(end.after.pinned).toEqual({ memtables: 0, tables: 0 });
    expect(end.after.tables).toBeLessThan(end.during.tables);
  }
  expect(r.break.released).toBe(true);
  expect(r.break.next).toBe(true);
  expect(r.return.released).toBe(true);
  expect(r.return.result).toEqual({ done: true });
  expect(r.return.next).toBe(true);
  expect(r.release.code).toBe('Released');
});

test('an async iterator that outlives close() fails with a SiltError Closed, and the database reopens', async ({ page }) => {
  const r = await runFresh<{
    seen: number;
    error: { isSiltError: boolean; code: string; message: string } | null;
    again: string;
    released: boolean;
    count: number;
  }>(page, 'iteratorOutlivesClose', { name: 'outlives' });
  expect(r.error).toEqual({ isSiltError: true, code: 'Closed', message: expect.stringMatching(/closed/) });
  expect(r.seen).toBe(150);
  expect(r.again).toBe('Closed');
  expect(r.released).toBe(true);
  expect(r.count).toBe(3000);
});

test('batch scans on OPFS: every entry of a snapshot in both directions and within bounds while writes and compactions land; seek; transient batches read as empty after the next call', async ({
  page,
}) => {
  test.setTimeout(60_000);
  const r = await runFresh<{
    canTransfer: boolean;
    scans: { bounds: unknown; expected: number; read: number; batches: number; mismatch: unknown; seekOk: boolean }[];
  }>(page, 'batchScans', { name: 'batches', n: 6000 });
  expect(r.canTransfer).toBe(true);
  expect(r.scans.length).toBe(4);
  for (const s of r.scans) {
    expect(s.mismatch, JSON.stringify(s.bounds)).toBeNull();
    expect(s.read).toBe(s.expected);
    expect(s.expected).toBeGreaterThan(400);
    // Batches start at 16 entries and double: several per scan.
    expect(s.batches).toBeGreaterThan(3);
    expect(s.seekOk).toBe(true);
  }
});
