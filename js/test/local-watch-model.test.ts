// A model-based test of `watch` in a worker (src/local/change-feed.ts,
// issue 39 item 1): random writes of every kind (puts, deletes, merges,
// batches, range deletes, clears, transactions, ingests) among flushes,
// compactions and failed writes, on a database watched by several watches
// at once (random ranges, some from a `since`, callbacks and async
// iterators, opened and closed as the run goes), each checked against an
// oracle of every update made: its events are exactly the updates after
// its start in its range, in order, with their sequence numbers, and no
// gap, except a transaction begun before the database's first watch,
// which is exactly one gap; and the database's close ends every watch.
// (An import's gap is in the shared scenarios, js/test/scenarios/watch.js.)
// SILT_LOCAL_WATCH_SEQUENCES sets the count.
import { describe, expect, test } from 'vitest';
import { WriteBatch } from '../src/core/batch.js';
import { successor } from '../src/core/bytes.js';
import { type Database, openMemory, readU64, u64, type Watch, type WatchEvent } from '../src/index.js';
import { Rng } from './tabs-world.js';

const SEQUENCES = Number(process.env.SILT_LOCAL_WATCH_SEQUENCES ?? 60);
const text = (b: Uint8Array | undefined) => (b === undefined ? '' : new TextDecoder().decode(b));
const enc = (s: string) => new TextEncoder().encode(s);

/**
 * One update as the oracle has it: its sequence number, kind, key and a
 * range's end; what it wrote (`put`: the value, `merge`: the operand), and
 * the key's value once its write committed (`after`: the oracle's, as text).
 */
type Update = { seq: number; kind: string; key: string; end?: string; wrote?: string | bigint; after?: string; withValues?: boolean };

/** A watch under test: its range, where it starts, and what it got. */
interface Watched {
  lower?: string;
  upper?: string;
  start: number;
  /** Whether it asked for values (`values: true`). */
  values: boolean;
  got: string[];
  watch: Watch;
  /** The updates it must report (up to when it was closed). */
  until?: number;
}

/** A value as the events show it: a counter's (keys c0..c4) number, else its text; '-' for none. */
function shownValue(key: string, v: Uint8Array | undefined): string {
  if (v === undefined) return '-';
  return key.startsWith('c') ? String(readU64(v)) : text(v);
}

function show(u: Update | WatchEvent, values = false): string {
  if (u.kind === 'gap') {
    const g = u as { from: number; to: number };
    return `${g.from}-${g.to} gap`;
  }
  const c = u as { seq: number; kind: string; key?: string | Uint8Array; end?: string | Uint8Array; value?: Uint8Array; after?: string };
  const t = (x: string | Uint8Array | undefined) => (typeof x === 'string' ? x : text(x));
  const keyed = c.kind === 'put' || c.kind === 'delete' || c.kind === 'merge';
  const value = !values || !keyed ? '' : ` =${'after' in c || 'wrote' in c ? c.after : shownValue(t(c.key), c.value)}`;
  return `${c.seq} ${c.kind} ${t(c.key)}${c.end === undefined ? '' : ` ${t(c.end)}`}${value}`;
}

function inRange(u: Update, w: Watched): boolean {
  const lo = w.lower;
  const hi = w.upper;
  if (hi !== undefined && u.key >= hi) return false;
  if (lo === undefined) return true;
  return u.end === undefined ? u.key >= lo : u.end > lo;
}

async function runSequence(seed: number): Promise<void> {
  const rng = new Rng(seed);
  const db: Database = await openMemory({ mergeOperator: 'u64add', writeBufferSize: 64 * 1024 });
  const key = () => `k${String(rng.int(60)).padStart(2, '0')}`;
  const updates: Update[] = [];
  const watches: Watched[] = [];
  const trace: string[] = [];
  /** The oracle: every key's value (text, or a counter). */
  const model = new Map<string, string | bigint>();
  /** Whether watches may ask for values (the first always does then); records carry them while one that asked is open. */
  const valuesOn = rng.chance(0.5);
  // A transaction begun before the first watch: its commit cannot list its keys.
  const early = rng.chance(0.3) ? db.begin() : undefined;
  early?.put('k00', enc('early'));
  const open = (since?: number) => {
    const bounds = [key(), key()].sort() as [string, string];
    const values = valuesOn && (watches.length === 0 || rng.chance(0.5));
    const w: Watched = { start: since ?? db.latestSequence(), values, got: [], watch: undefined as unknown as Watch };
    const o: Record<string, unknown> = {};
    if (values) o.values = true;
    if (rng.chance(0.6)) o.gte = w.lower = bounds[0];
    if (rng.chance(0.6)) o.lt = w.upper = bounds[1] === bounds[0] ? `${bounds[1]}~` : bounds[1];
    if (since !== undefined) o.since = since;
    if (rng.chance(0.5)) {
      w.watch = db.watch(o, (e) => w.got.push(show(e, values)));
    } else {
      w.watch = db.watch(o);
      void (async () => {
        for await (const e of w.watch) w.got.push(show(e, values));
      })();
    }
    watches.push(w);
    trace.push(`watch ${JSON.stringify(o)}`);
  };
  open();
  /** Runs a write; its updates took the numbers after `before`. */
  const wrote = (before: number, made: Omit<Update, 'seq'>[]) => {
    // The oracle takes the write, then each of its key updates gets the value after it.
    for (const m of made) {
      if (m.kind === 'put' || m.kind === 'ingest') {
        if (m.kind === 'put') model.set(m.key, m.wrote!);
      } else if (m.kind === 'delete') model.delete(m.key);
      else if (m.kind === 'merge') model.set(m.key, ((model.get(m.key) as bigint | undefined) ?? 0n) + (m.wrote as bigint));
      else if (m.kind === 'deleteRange') for (const k of [...model.keys()]) if (k >= m.key && k < m.end!) model.delete(k);
    }
    for (const m of made) if (m.kind === 'put' || m.kind === 'delete' || m.kind === 'merge') m.after = String(model.get(m.key) ?? '-');
    // Records carry values only while a watch with values is open.
    const withValues = watches.some((w) => w.values && w.until === undefined);
    for (const m of made) m.withValues = withValues;
    const after = db.latestSequence();
    if (made.length === 1 && made[0]!.kind === 'ingest') {
      expect(after).toBe(before + 1);
      updates.push({ seq: after, ...made[0]! });
      return;
    }
    expect(after - before, `${trace.at(-1)}: numbers taken`).toBe(made.length);
    for (const [i, m] of made.entries()) updates.push({ seq: before + 1 + i, ...m });
  };
  /** The numbers of the early transaction's commit: one gap. */
  let gap: [number, number] | undefined;
  if (early !== undefined) {
    const before = db.latestSequence();
    early.commit();
    model.set('k00', 'early');
    gap = [before + 1, db.latestSequence()];
    trace.push('early commit');
  }
  const steps = 20 + rng.int(60);
  for (let s = 0; s < steps; s++) {
    const r = rng.next();
    const before = db.latestSequence();
    if (r < 0.25) {
      const k = key();
      db.put(k, enc(`v${s}`));
      trace.push(`put ${k}`);
      wrote(before, [{ kind: 'put', key: k, wrote: `v${s}` }]);
    } else if (r < 0.33) {
      const k = key();
      db.delete(k);
      trace.push(`delete ${k}`);
      wrote(before, [{ kind: 'delete', key: k }]);
    } else if (r < 0.4) {
      const k = `c${rng.int(5)}`;
      db.merge(k, u64(1));
      trace.push(`merge ${k}`);
      wrote(before, [{ kind: 'merge', key: k, wrote: 1n }]);
    } else if (r < 0.5) {
      const b = new WriteBatch();
      const made: Omit<Update, 'seq'>[] = [];
      for (let i = 0, n = 1 + rng.int(5); i < n; i++) {
        const k = key();
        if (rng.chance(0.7)) {
          b.put(k, enc(`b${i}`));
          made.push({ kind: 'put', key: k, wrote: `b${i}` });
        } else {
          b.delete(k);
          made.push({ kind: 'delete', key: k });
        }
      }
      db.write(b);
      trace.push(`batch ${made.map((m) => m.key)}`);
      wrote(before, made);
    } else if (r < 0.56) {
      const [a, z] = [key(), key()].sort() as [string, string];
      if (a === z) continue;
      if (rng.chance(0.5)) db.deleteRange(a, z);
      else db.clear({ gte: a, lt: z });
      trace.push(`deleteRange ${a} ${z}`);
      wrote(before, [{ kind: 'deleteRange', key: a, end: z }]);
    } else if (r < 0.66) {
      const made: Omit<Update, 'seq'>[] = [];
      await db.transaction((tx) => {
        made.length = 0;
        for (let i = 0, n = 1 + rng.int(4); i < n; i++) {
          const k = key();
          const d = rng.next();
          if (d < 0.5) {
            tx.put(k, enc(`t${i}`));
            made.push({ kind: 'put', key: k, wrote: `t${i}` });
          } else if (d < 0.75) {
            tx.delete(k);
            made.push({ kind: 'delete', key: k });
          } else {
            const k = `c${rng.int(5)}`;
            tx.merge(k, u64(2));
            made.push({ kind: 'merge', key: k, wrote: 2n });
          }
        }
      });
      trace.push(`transaction ${made.map((m) => `${m.kind} ${m.key}`)}`);
      wrote(before, made);
    } else if (r < 0.72) {
      const keys = [...new Set(Array.from({ length: 1 + rng.int(6) }, key))];
      await db.ingest(keys.map((k) => [k, enc('i')] as const));
      const sorted = keys.sort();
      for (const k of sorted) model.set(k, 'i');
      trace.push(`ingest ${sorted}`);
      wrote(before, [{ kind: 'ingest', key: sorted[0]!, end: text(successor(enc(sorted.at(-1)!))) }]);
    } else if (r < 0.76) {
      // A write refused: nothing taken, nothing reported.
      expect(() => db.merge('k01', enc('not 8 bytes'))).toThrow();
      trace.push('refused merge');
      expect(db.latestSequence()).toBe(before);
    } else if (r < 0.8) {
      db.flush();
    } else if (r < 0.83) {
      await db.compactRange();
    } else if (r < 0.9) {
      open(rng.chance(0.5) ? rng.int(db.latestSequence() + 1) : undefined);
    } else if (r < 0.95) {
      const live = watches.filter((w) => w.until === undefined);
      if (live.length > 0) {
        const w = rng.pick(live);
        // What it must have is what came before: the events of a write made
        // in this task arrive in a microtask, so let them come first.
        await Promise.resolve();
        await new Promise((resolve) => setTimeout(resolve, 0));
        w.until = db.latestSequence();
        w.watch.close();
      }
    } else {
      await new Promise((resolve) => setTimeout(resolve, rng.int(3)));
    }
  }
  await new Promise((resolve) => setTimeout(resolve, 5));
  for (const w of watches) {
    const end = w.until ?? db.latestSequence();
    const want: string[] = [];
    if (gap !== undefined && gap[0] > w.start && gap[1] <= end) want.push(`${gap[0]}-${gap[1]} gap`);
    for (const u of updates) {
      if (u.seq <= w.start || u.seq > end || !inRange(u, w)) continue;
      const keyed = u.kind === 'put' || u.kind === 'delete' || u.kind === 'merge';
      // A change made while no watch asked for values has none: a gap to a watch with values.
      want.push(w.values && keyed && !u.withValues ? `${u.seq}-${u.seq} gap` : show(u, w.values));
    }
    want.sort((a, b) => Number.parseInt(a, 10) - Number.parseInt(b, 10));
    expect(w.got, `seed ${seed}: watch from ${w.start} [${w.lower}, ${w.upper}); ${trace.join('; ')}`).toEqual(want);
  }
  // The database's close ends every watch (closed ones had ended already).
  db.close();
  await Promise.all(watches.map((w) => w.watch.ended));
  expect(() => db.watch()).toThrow(/closed/);
}

describe('watch in a worker, model-based', () => {
  test(`${SEQUENCES} random sequences: each watch reports exactly the updates after its start in its range, in order`, async () => {
    for (let seed = 1; seed <= SEQUENCES; seed++) await runSequence(seed);
  });
});

describe('watch in a worker, what cannot be listed', () => {
  test('a batch with a key of the reserved range is applied, not reported as failed, and is one gap; the last writes before close() reach a callback of a watch that had started', async () => {
    const db = await openMemory();
    const got: string[] = [];
    db.watch({}, (e) => got.push(show(e)));
    await new Promise((resolve) => setTimeout(resolve, 0)); // its start (a catch-up) done
    const reserved = Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, ...enc('siltdb/x')]);
    db.write(new WriteBatch().put('a', enc('1')).put(reserved, enc('2')));
    expect(text(db.get('a'))).toBe('1');
    db.put('b', enc('3'));
    db.close(); // before the microtask that delivers them
    expect(got).toEqual(['1-2 gap', '3 put b']);
  });
});
