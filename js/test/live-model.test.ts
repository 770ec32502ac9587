// A model-based test of live queries (src/tabs/live-query.ts, issue 39
// item 2), through a worker's `open()` and through `connect()` (the targets
// of the shared scenarios: scenario-targets.ts), on a database and on a
// sublevel: random writes of every kind (puts, deletes, merges, batches
// that touch a key twice, range deletes, clears, transactions, ingests)
// under several live queries at once (random ranges, limits, directions,
// keys only or values; subscribed, unsubscribed and subscribed again,
// closed and opened as the run goes). Every result any query emits must be
// exactly what a read at its sequence number returns, by an oracle of every
// state the database went through; a result's sequence number must be the
// end of a write (never the middle of one); at the end each query's
// current result must be the database's state. SILT_LIVE_SEQUENCES sets the
// count per target.
import { describe, expect, test } from 'vitest';
import type { Live, LiveResult } from '../src/index.js';
import { scenario } from './scenarios/scenario.js';
import { inWorker, throughConnect } from './scenario-targets.js';
import { Rng } from './tabs-world.js';

const SEQUENCES = Number(process.env.SILT_LIVE_SEQUENCES ?? 12);
const text = (b: unknown) => (b instanceof Uint8Array ? new TextDecoder().decode(b) : String(b));
const enc = (s: string) => new TextEncoder().encode(s);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A value as a result shows it: counters (keys c*) as numbers. */
function shownValue(key: string, v: unknown, readU64: (b: Uint8Array) => bigint): string {
  return key.startsWith('c') ? String(readU64(v as Uint8Array)) : text(v);
}

/** A live query under test: what it shows, and what it emitted. */
interface Query {
  live: Live<LiveResult<Uint8Array, Uint8Array>>;
  lower?: string;
  upper?: string;
  limit?: number;
  reverse: boolean;
  values: boolean;
  unsubscribe?: (() => void) | undefined;
  results: LiveResult<Uint8Array, Uint8Array>[];
  what: string;
}

type Db = {
  put(k: string, v: Uint8Array): unknown;
  delete(k: string): unknown;
  merge(k: string, v: Uint8Array): unknown;
  deleteRange(a: string, z: string): unknown;
  clear(o: object): unknown;
  batch(): { put(k: string, v: Uint8Array): unknown; delete(k: string): unknown };
  write(b: unknown): unknown;
  transaction(
    f: (tx: { put(k: string, v: Uint8Array): unknown; delete(k: string): unknown; merge(k: string, v: Uint8Array): unknown }) => unknown,
  ): Promise<unknown>;
  ingest(entries: [string, Uint8Array][]): unknown;
  latestSequence(): number | Promise<number>;
  live(o: object): Live<LiveResult<Uint8Array, Uint8Array>>;
};

async function runModel(db: Db, seed: number, lib: { u64(n: number | bigint): Uint8Array; readU64(b: Uint8Array): bigint }): Promise<void> {
  const rng = new Rng(seed);
  const key = () => `k${String(rng.int(30)).padStart(2, '0')}`;
  /** The oracle: the state after each write, by the write's last sequence number. */
  const model = new Map<string, string>();
  const states = new Map<number, Map<string, string>>();
  states.set(await db.latestSequence(), new Map());
  const trace: string[] = [];
  const queries: Query[] = [];

  const expected = (q: Query, state: Map<string, string>): string => {
    let keys = [...state.keys()].filter((k) => (q.lower === undefined || k >= q.lower) && (q.upper === undefined || k < q.upper)).sort();
    if (q.reverse) keys.reverse();
    if (q.limit !== undefined) keys = keys.slice(0, q.limit);
    return keys.map((k) => (q.values ? `${k}=${state.get(k)}` : k)).join(' ');
  };
  const shown = (q: Query, r: LiveResult<Uint8Array, Uint8Array>): string =>
    r.entries.map(([k, v]) => (q.values ? `${text(k)}=${shownValue(text(k), v, lib.readU64)}` : text(k))).join(' ');
  const subscribe = (q: Query) => {
    const s = q.live.subscribe((r) => q.results.push(r));
    q.unsubscribe = () => s.unsubscribe();
  };
  const open = () => {
    const q: Query = { live: undefined as unknown as Query['live'], reverse: rng.chance(0.4), values: rng.chance(0.7), results: [], what: '' };
    const [a, z] = [key(), key()].sort() as [string, string];
    const o: Record<string, unknown> = { reverse: q.reverse, values: q.values };
    if (rng.chance(0.6)) o.gte = q.lower = a;
    if (rng.chance(0.6)) o.lt = q.upper = z === a ? `${z}~` : z;
    if (rng.chance(0.6)) o.limit = q.limit = 1 + rng.int(5);
    q.what = JSON.stringify(o);
    q.live = db.live(o);
    subscribe(q);
    queries.push(q);
    trace.push(`live ${q.what}`);
  };
  /** A write was made: the oracle's state after it, at its last sequence number. */
  const wrote = async (what: string) => {
    trace.push(what);
    states.set(await db.latestSequence(), new Map(model));
  };
  const counter = (k: string, n: bigint) => model.set(k, String(BigInt(model.get(k) ?? '0') + n));

  open();
  open();
  const steps = 30 + rng.int(50);
  for (let s = 0; s < steps; s++) {
    const r = rng.next();
    if (r < 0.22) {
      const k = key();
      await db.put(k, enc(`v${s}`));
      model.set(k, `v${s}`);
      await wrote(`put ${k}`);
    } else if (r < 0.32) {
      const k = key();
      await db.delete(k);
      model.delete(k);
      await wrote(`delete ${k}`);
    } else if (r < 0.38) {
      const k = `c${rng.int(3)}`;
      await db.merge(k, lib.u64(1));
      counter(k, 1n);
      await wrote(`merge ${k}`);
    } else if (r < 0.48) {
      const b = db.batch();
      const made: string[] = [];
      for (let i = 0, n = 1 + rng.int(5); i < n; i++) {
        // A key may come twice: the result is the state after the batch.
        const k = i > 0 && rng.chance(0.3) ? made.at(-1)!.split(' ')[1]! : key();
        if (rng.chance(0.7)) {
          b.put(k, enc(`b${s}.${i}`));
          model.set(k, `b${s}.${i}`);
          made.push(`put ${k}`);
        } else {
          b.delete(k);
          model.delete(k);
          made.push(`delete ${k}`);
        }
      }
      await db.write(b);
      await wrote(`batch ${made.join(', ')}`);
    } else if (r < 0.54) {
      const [a, z] = [key(), key()].sort() as [string, string];
      if (a === z) continue;
      if (rng.chance(0.5)) await db.deleteRange(a, z);
      else await db.clear({ gte: a, lt: z });
      for (const k of [...model.keys()]) if (k >= a && k < z) model.delete(k);
      await wrote(`deleteRange ${a} ${z}`);
    } else if (r < 0.64) {
      const ops: [string, string][] = [];
      for (let i = 0, n = 1 + rng.int(4); i < n; i++) ops.push([rng.pick(['put', 'delete', 'merge']), key()]);
      await db.transaction(async (tx) => {
        for (const [i, [op, k]] of ops.entries()) {
          if (op === 'put') await tx.put(k, enc(`t${s}.${i}`));
          else if (op === 'delete') await tx.delete(k);
          else await tx.merge(`c${k.at(-1)! < '5' ? 0 : 1}`, lib.u64(2));
        }
      });
      for (const [i, [op, k]] of ops.entries()) {
        if (op === 'put') model.set(k, `t${s}.${i}`);
        else if (op === 'delete') model.delete(k);
        else counter(`c${k.at(-1)! < '5' ? 0 : 1}`, 2n);
      }
      await wrote(`transaction ${ops.map((o) => o.join(' ')).join(', ')}`);
    } else if (r < 0.7) {
      const keys = [...new Set(Array.from({ length: 1 + rng.int(5) }, key))].sort();
      await db.ingest(keys.map((k) => [k, enc(`i${s}`)]));
      for (const k of keys) model.set(k, `i${s}`);
      await wrote(`ingest ${keys}`);
    } else if (r < 0.76) {
      open();
    } else if (r < 0.82) {
      const q = rng.pick(queries);
      if (q.unsubscribe !== undefined) {
        q.unsubscribe();
        q.unsubscribe = undefined;
        trace.push(`unsubscribe ${q.what}`);
      } else {
        subscribe(q);
        trace.push(`subscribe ${q.what}`);
      }
    } else if (r < 0.85 && queries.length > 1) {
      const q = queries.splice(rng.int(queries.length), 1)[0]!;
      q.live.close();
      trace.push(`close ${q.what}`);
    } else {
      await sleep(rng.int(3));
    }
  }
  // Every subscribed query catches up with the last write.
  const latest = await db.latestSequence();
  const final = states.get(latest)!;
  for (const q of queries) {
    if (q.unsubscribe === undefined) subscribe(q);
    for (let i = 0; i < 400; i++) {
      const c = q.live.current;
      if (c !== undefined && (c.seq >= latest || (shown(q, c) === expected(q, final) && q.results.includes(c)))) break;
      await sleep(5);
    }
  }
  const context = () => `seed ${seed}: ${trace.join('; ')}`;
  for (const q of queries) {
    for (const r of q.results) {
      const state = states.get(r.seq);
      expect(state, `${context()}\n${q.what}: a result at ${r.seq}, not the end of a write`).toBeDefined();
      expect(shown(q, r), `${context()}\n${q.what}: the result at ${r.seq}`).toBe(expected(q, state!));
    }
    expect(q.live.current, `${context()}\n${q.what}: a current result`).toBeDefined();
    expect(shown(q, q.live.current!), `${context()}\n${q.what}: the current result`).toBe(expected(q, final));
    q.live.close();
  }
}

const model = (seed: number) =>
  scenario(`live model, seed ${seed}`, async (t) => {
    const db = (await t.open({ mergeOperator: 'u64add' })) as unknown as Db;
    await runModel(db, seed, t.lib as unknown as Parameters<typeof runModel>[2]);
  });

describe('live queries, model-based', () => {
  for (const [title, run, sublevel] of [
    ['open() in a worker', inWorker, false],
    ['open() in a worker, on a sublevel', inWorker, true],
    ['connect()', throughConnect, false],
    ['connect(), on a sublevel', throughConnect, true],
  ] as const) {
    test(`${title}: ${SEQUENCES} random sequences, every result equal to a read at its sequence number`, async () => {
      for (let seed = 1; seed <= SEQUENCES; seed++) await run(model(seed), sublevel);
    }, 300_000);
  }
});
