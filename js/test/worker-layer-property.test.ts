// A seeded property test of the worker and OPFS layer, on the in-memory
// stand-ins for OPFS and Web Locks (fakes.ts) and the real wasm build:
// random sequences of open / close (parking) / reopen, puts, deletes and
// reads with pinned views held and dropped, forced garbage collection,
// pool top-ups, importDatabase / removeDatabase and crashes, with failures
// injected into the fake OPFS calls, checked against a Map oracle:
// - every view reads the bytes it was handed out with while its result is
//   not released (or reads as empty, detached by memory growth);
// - no acknowledged write is lost once a sync write, a flush or a clean
//   close made it durable, and nothing reads back that was never written;
// - a failed importDatabase leaves no database behind;
// - every call settles, and every error is a SiltError with a known code
//   (never `Internal`);
// - never more sync access handles are open than the sequence's
//   `handleBudget`, and the budget counts exactly those open.
//
// CI runs SEQUENCES_CI sequences; SILT_SOAK=1 runs SEQUENCES_SOAK; SILT_SEED=n
// runs the one sequence of seed n (the failure message names it).
import { expect, test } from 'vitest';
import { openMemory, SILT_ERROR_CODES, SiltError, type Database } from '../src/index.js';
import { importDatabaseOn, openOn, removeDatabaseOn, type StorageEnv } from '../src/local/open.js';
import { realmHandles } from '../src/opfs/handle-budget.js';
import { releaseParked } from '../src/opfs/parking.js';
import { domError, FakeDirectory, FakeLocks, type FakeOp, type Faults } from './fakes.js';
import { Rng } from './tabs-world.js';

const SOAK = process.env.SILT_SOAK === '1';
const SEQUENCES_CI = 24;
const SEQUENCES_SOAK = 600;
const OPS = 70;
const NAMES = ['a', 'b', 'c'];
const KEYS = 120;
const SETTLE_MS = 15_000;

/** The tab tests' mulberry32 (`Rng`), as a function. */
function prng(seed: number): () => number {
  const r = new Rng(seed);
  return () => r.next();
}

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const keyOf = (i: number) => `key${String(i).padStart(4, '0')}`;
/** The id a value starts with (values are `id|padding`). */
const idOf = (v: Uint8Array | undefined): string | null => (v === undefined ? null : fromUtf8.decode(v).split('|')[0]!);

/** What the oracle knows of one key. */
interface KeyState {
  /** The last acknowledged write (null: deleted or never written). */
  acked: string | null;
  /** The state as of the last point that made every acknowledged write durable. */
  durable: string | null;
  /** Acknowledged since then: a crash may lose them. */
  since: Set<string | null>;
  /** Writes that failed with an error that does not promise "nothing written". */
  uncertain: Set<string | null>;
}

interface Model {
  keys: Map<string, KeyState>;
  db: Database | undefined;
  /** The last session ended without a clean close (a crash, a close that threw). */
  unclean: boolean;
  /** Whether a database of this name may exist: 'maybe' after a call that failed midway. */
  exists: boolean | 'maybe';
}

/** The views of one result, and the result while the sequence still holds it (else only its views do). */
interface Held {
  views: { view: Uint8Array; expected: Uint8Array }[];
  result: { release(): void } | undefined;
}

interface Figures {
  sequences: number;
  ops: number;
  injected: number;
  errors: Map<string, number>;
  viewsChecked: number;
  /** Views found detached by memory growth (their buffer gone: they read as empty, never as other bytes). */
  viewsDetached: number;
  crashes: number;
  reopened: number;
  imports: { ok: number; failed: number };
  /** The most sync access handles open at once, over the sequences' budgets. */
  handlesPeak: number;
}

const figures: Figures = {
  sequences: 0,
  ops: 0,
  injected: 0,
  errors: new Map(),
  viewsChecked: 0,
  viewsDetached: 0,
  crashes: 0,
  reopened: 0,
  imports: { ok: 0, failed: 0 },
  handlesPeak: 0,
};

/** Files of the tree with an open sync access handle. */
function openHandlesIn(dir: FakeDirectory): number {
  let n = 0;
  for (const f of dir.files.values()) if (f.open) n++;
  for (const d of dir.dirs.values()) n += openHandlesIn(d);
  return n;
}

/** Awaits `p`, failing if it does not settle in time. */
async function settles<T>(what: string, p: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle in ${SETTLE_MS} ms`)), SETTLE_MS);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Checks that `e` is a SiltError with a known code other than Internal; returns its code. */
function codeOf(e: unknown, what: string): string {
  if (!(e instanceof SiltError)) throw new Error(`${what} threw a non-SiltError: ${String(e)}`, { cause: e });
  if (!(SILT_ERROR_CODES as readonly string[]).includes(e.code) || e.code === 'Internal') {
    throw new Error(`${what} threw ${e.code}: ${e.message}`, { cause: e });
  }
  figures.errors.set(e.code, (figures.errors.get(e.code) ?? 0) + 1);
  return e.code;
}

/**
 * Codes after which a write has written nothing. Not `QuotaExceeded`: the
 * faults here make a log's sync fail too, after its record was appended,
 * and a write whose sync failed may or may not be durable (as anywhere).
 */
const NOTHING_WRITTEN = new Set(['PoolExhausted', 'InvalidArgument']);

async function runSequence(seed: number): Promise<void> {
  const rnd = prng(seed);
  const faultRnd = prng(seed ^ 0x5bd1e995);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const faults: Faults = { hook: undefined };
  let plan: { ops: FakeOp[]; p: number; kind: string } | undefined;
  faults.hook = (op, name) => {
    if (plan === undefined || !plan.ops.includes(op) || faultRnd() >= plan.p) return;
    figures.injected++;
    throw domError(plan.kind, `injected ${plan.kind} on ${op} of ${name}`);
  };
  let env: StorageEnv = { root: new FakeDirectory(faults), locks: new FakeLocks() };
  const models = new Map<string, Model>(NAMES.map((n) => [n, { keys: new Map(), db: undefined, unclean: false, exists: false }]));
  const held: Held[] = [];
  let counter = 0;
  let step = 0;
  const where = () => `seed ${seed}, step ${step}`;
  /** The handle budget of every open of this sequence: small, so that three databases meet it. */
  const handleBudget = pick([32, 40, 64]);
  /**
   * Never more open than the budget, nor than it counts (a top-up in
   * flight counts its handles before it opens them); `exact` once nothing
   * is in flight: exactly those open.
   */
  const checkHandles = (exact = false) => {
    const open = openHandlesIn(env.root as FakeDirectory);
    figures.handlesPeak = Math.max(figures.handlesPeak, open / handleBudget);
    if (open > handleBudget) throw new Error(`${where()}: ${open} sync access handles open, past the budget of ${handleBudget}`);
    const counted = realmHandles(env.locks).held;
    if (exact ? counted !== open : counted < open) throw new Error(`${where()}: ${open} sync access handles open, and the budget counts ${counted}`);
  };
  /** What the sequence did, for the message of a failure. */
  const trace: string[] = [];
  const note = (what: string) => trace.push(`${step} ${what}`);

  const state = (m: Model, k: string): KeyState => {
    let s = m.keys.get(k);
    if (s === undefined) {
      s = { acked: null, durable: null, since: new Set(), uncertain: new Set() };
      m.keys.set(k, s);
    }
    return s;
  };
  /** Every acknowledged write of `m` is durable now. */
  const durablePoint = (m: Model) => {
    for (const s of m.keys.values()) {
      s.durable = s.acked;
      s.since.clear();
    }
  };
  const allowed = (m: Model, k: string, afterCrash: boolean): Set<string | null> => {
    const s = state(m, k);
    const out = new Set<string | null>([s.acked, ...s.uncertain]);
    if (afterCrash) {
      out.add(s.durable);
      for (const v of s.since) out.add(v);
    }
    return out;
  };
  const checkViews = () => {
    for (const h of held) {
      for (const v of h.views) {
        if (v.view.length === 0) {
          // Detached by memory growth ('fixed' mode): its buffer is gone. A
          // view that reads as empty over a live buffer is a fault.
          if (v.view.buffer.byteLength !== 0) throw new Error(`${where()}: a view of "${idOf(v.expected)}" reads as empty, its buffer not detached`);
          figures.viewsDetached++;
          continue;
        }
        figures.viewsChecked++;
        if (v.view.length !== v.expected.length || v.view.some((b, i) => b !== v.expected[i])) {
          throw new Error(`${where()}: a view of "${idOf(v.expected)}" now reads "${idOf(v.view.slice())}"`);
        }
      }
    }
  };
  const newValue = (name: string, k: string): { id: string; bytes: Uint8Array } => {
    const id = `${name}/${k}/${counter++}`;
    return { id, bytes: utf8.encode(`${id}|${'x'.repeat(Math.floor(rnd() * 1500))}`) };
  };

  /** Opens `name` and reconciles its model with what it holds. */
  const openModel = async (name: string) => {
    const m = models.get(name)!;
    const parkable = rnd() < 0.6;
    const options = { poolReserve: 4 + Math.floor(rnd() * 5), handleBudget, writeBufferSize: 64 * 1024, blockCacheCapacity: 256 * 1024 };
    let db: Database;
    try {
      db = await settles(`${where()}: open ${name}`, openOn(env, name, options, parkable));
    } catch (e) {
      note(`open ${name}: ${codeOf(e, `${where()}: open ${name}`)} (${(e as Error).message.slice(0, 160)})`);
      if (m.exists === false) m.exists = 'maybe';
      return;
    }
    m.exists = true;
    note(`open ${name}${parkable ? ' (parkable)' : ''}${m.unclean ? ' after an unclean end' : ''}`);
    m.db = db;
    figures.reopened++;
    // Every key reads back what the oracle allows; from now on it is exact.
    let i = 0;
    try {
      for (; i < KEYS; i++) {
        const k = keyOf(i);
        const got = idOf(db.get(k));
        const ok = allowed(m, k, m.unclean);
        if (!ok.has(got)) throw new Error(`${where()}: after reopening ${name}, ${k} reads ${got}; allowed: ${[...ok].join(', ')}`);
        const s = state(m, k);
        s.acked = got;
        // What an open shows is durable: it syncs the logs it replayed
        // (after an unclean end their tails may never have been).
        s.durable = got;
        s.since.clear();
        s.uncertain.clear();
      }
      m.unclean = false;
    } catch (e) {
      if (!(e instanceof SiltError)) throw e;
      // A read failed (a fault): the keys not read yet may hold any state
      // the oracle allowed (after an unclean end, not necessarily the last
      // acknowledged one).
      codeOf(e, `${where()}: reading ${name} after open`);
      if (m.unclean) {
        for (; i < KEYS; i++) {
          const s = state(m, keyOf(i));
          for (const v of allowed(m, keyOf(i), true)) s.uncertain.add(v);
        }
      }
    }
  };

  const closeModel = (name: string, m: Model) => {
    const db = m.db!;
    m.db = undefined;
    try {
      // A close that returns made every acknowledged write durable: after
      // an error that stopped writes, it throws instead.
      db.close();
      durablePoint(m);
      note(`close ${name}`);
    } catch (e) {
      note(`close ${name}: ${codeOf(e, `${where()}: close`)}`);
      m.unclean = true;
    }
  };

  /** removeDatabase of `name`, not open here; the oracle forgets it. */
  const removeModel = async (name: string) => {
    const m = models.get(name)!;
    try {
      await settles(`${where()}: removeDatabase ${name}`, removeDatabaseOn(env, name, 300));
      note(`remove ${name}`);
      for (const s of m.keys.values()) Object.assign(s, { acked: null, durable: null, since: new Set(), uncertain: new Set() });
      m.unclean = false;
      m.exists = false;
    } catch (e) {
      note(`remove ${name}: ${codeOf(e, `${where()}: removeDatabase ${name}`)}`);
      // Perhaps removed, perhaps not: the next open tells.
      for (const s of m.keys.values()) {
        s.uncertain.add(null);
        s.uncertain.add(s.acked);
      }
      m.exists = 'maybe';
    }
  };

  const crash = () => {
    figures.crashes++;
    note('crash');
    const image = (env.root as FakeDirectory).crashImage(faults);
    // Whatever this realm held is gone with the "worker": parked pools
    // too (their handles are on the old tree).
    for (const [name, m] of models) {
      if (m.db !== undefined) {
        try {
          m.db.close();
        } catch {
          // The old tree; nothing of it counts any more.
        }
        m.db = undefined;
      }
      releaseParked(name); // after the close, which may have parked it
      m.unclean = true;
    }
    env = { root: image, locks: new FakeLocks() };
  };

  try {
    for (step = 0; step < OPS; step++) {
      figures.ops++;
      const name = pick(NAMES);
      const m = models.get(name)!;
      const r = rnd();
      if (r < 0.08) {
        // Faults on for a while, or off.
        plan =
          rnd() < 0.6
            ? undefined
            : {
                ops: pick<FakeOp[]>([
                  ['getFileHandle', 'createSyncAccessHandle'],
                  ['write', 'truncate'],
                  ['flush'],
                  ['removeEntry'],
                  ['read'],
                  ['getFileHandle', 'createSyncAccessHandle', 'write', 'flush', 'removeEntry'],
                ]),
                p: pick([0.05, 0.2, 0.6, 1]),
                kind: pick(['QuotaExceededError', 'UnknownError', 'InvalidStateError']),
              };
        note(plan === undefined ? 'faults off' : `faults: ${plan.kind} on ${plan.ops.join(',')} p=${plan.p}`);
      } else if (m.db === undefined) {
        if (r < 0.13) {
          // importDatabase of a small database into `name` (removed first, mostly).
          if (rnd() < 0.7) await removeModel(name);
          const src = await openMemory();
          const data = new Map<string, string>();
          for (let i = 0, n = Math.floor(rnd() * 60); i < n; i++) {
            const k = keyOf(Math.floor(rnd() * KEYS));
            const v = newValue(name, k);
            src.put(k, v.bytes);
            data.set(k, v.id);
          }
          let all = new Uint8Array(await new Response(src.export()).arrayBuffer());
          src.close();
          if (rnd() < 0.3) all = all.subarray(0, Math.floor(all.length * rnd())); // truncated: refused
          try {
            await settles(`${where()}: importDatabase ${name}`, importDatabaseOn(env, name, [all], {}));
            figures.imports.ok++;
            note(`import ${name}: ${data.size} keys`);
            for (const s of m.keys.values()) Object.assign(s, { acked: null, durable: null, since: new Set(), uncertain: new Set() });
            for (const [k, id] of data) Object.assign(state(m, k), { acked: id, durable: id });
            m.unclean = false;
            m.exists = true;
          } catch (e) {
            const code = codeOf(e, `${where()}: importDatabase ${name}`);
            figures.imports.failed++;
            note(`import ${name}: ${code}`);
            if (m.exists === false && plan === undefined) {
              // A failed import leaves nothing: the name is still free.
              const err = await openOn(env, name, { createIfMissing: false }).then(
                (db) => {
                  const n = db.count();
                  db.close();
                  return `a database of ${n} keys`;
                },
                (e2: unknown) => codeOf(e2, 'open after a failed import'),
              );
              if (err !== 'NotFound') throw new Error(`${where()}: after a failed import (${code}) of ${name}, opening it found ${err}`);
            } else if (m.exists === false) {
              m.exists = 'maybe'; // faults may have kept the removal from finishing: the next open removes it
            }
          }
        } else if (r < 0.15) {
          await removeModel(name);
        } else {
          await openModel(name);
        }
      } else {
        const db = m.db;
        if (r < 0.45) {
          // A synchronous burst of writes.
          const done: string[] = [];
          for (let i = 0, n = 1 + Math.floor(rnd() * 40); i < n; i++) {
            const k = keyOf(Math.floor(rnd() * KEYS));
            const del = rnd() < 0.15;
            const v = del ? { id: null, bytes: undefined } : newValue(name, k);
            const sync = rnd() < 0.2;
            try {
              if (v.bytes === undefined) db.delete(k, { sync });
              else db.put(k, v.bytes, { sync });
              const s = state(m, k);
              s.acked = v.id;
              s.since.add(v.id);
              if (sync) durablePoint(m);
              done.push(`${k}=${v.id?.split('/')[2] ?? 'del'}${sync ? ' sync' : ''}`);
            } catch (e) {
              const code = codeOf(e, `${where()}: write`);
              if (!NOTHING_WRITTEN.has(code)) {
                state(m, k).uncertain.add(v.id);
              }
              done.push(`${k}: ${code}`);
            }
          }
          note(`writes ${name}: ${done.join(', ')}`);
        } else if (r < 0.6) {
          // Reads: views held, some results kept, most dropped.
          for (let i = 0, n = 1 + Math.floor(rnd() * 6); i < n; i++) {
            const k = keyOf(Math.floor(rnd() * KEYS));
            const keep = rnd() < 0.3;
            try {
              if (rnd() < 0.5) {
                const got = db.getPinned(k);
                const ok = allowed(m, k, m.unclean);
                if (!ok.has(idOf(got?.bytes))) throw new Error(`${where()}: get ${k} of ${name} reads ${idOf(got?.bytes)}; allowed ${[...ok].join(', ')}`);
                if (got !== undefined) held.push({ views: [{ view: got.bytes, expected: got.bytes.slice() }], result: keep ? got : undefined });
              } else {
                const ks = [k, keyOf(Math.floor(rnd() * KEYS))];
                const res = db.multiGet(ks);
                const h: Held = { views: [], result: keep ? res : undefined };
                for (const [j, kk] of ks.entries()) {
                  const v = res.get(j);
                  const ok = allowed(m, kk, m.unclean);
                  if (!ok.has(idOf(v))) throw new Error(`${where()}: multiGet ${kk} of ${name} reads ${idOf(v)}; allowed ${[...ok].join(', ')}`);
                  if (v !== undefined) h.views.push({ view: v, expected: v.slice() });
                }
                held.push(h);
              }
            } catch (e) {
              if (!(e instanceof SiltError)) throw e;
              codeOf(e, `${where()}: read`);
            }
          }
          // Some dropped (views and all), some released, some results forgotten (their views kept).
          while (held.length > 32) held.splice(Math.floor(rnd() * held.length), 1);
          const h = held[Math.floor(rnd() * held.length)];
          if (h?.result !== undefined) {
            if (rnd() < 0.3) {
              h.result.release(); // its views are invalid now: no longer checked
              held.splice(held.indexOf(h), 1);
            } else if (rnd() < 0.5) {
              h.result = undefined;
            }
          }
        } else if (r < 0.66) {
          (globalThis as { gc?: () => void }).gc!();
          await sleep(rnd() < 0.5 ? 0 : 5);
        } else if (r < 0.72) {
          await sleep(rnd() < 0.5 ? 0 : 10); // the event loop: top-ups and background work
        } else if (r < 0.76) {
          try {
            await settles(`${where()}: idle`, db.idle());
          } catch (e) {
            codeOf(e, `${where()}: idle`);
          }
        } else if (r < 0.8) {
          try {
            db.flush();
            durablePoint(m);
            note(`flush ${name}`);
          } catch (e) {
            const code = codeOf(e, `${where()}: flush`);
            note(`flush ${name}: ${code}`);
          }
        } else if (r < 0.82) {
          try {
            await settles(`${where()}: compactRange`, db.compactRange());
          } catch (e) {
            codeOf(e, `${where()}: compactRange`);
          }
        } else if (r < 0.94) {
          closeModel(name, m);
          if (rnd() < 0.5) await openModel(name); // a reopen at once (from the parked pool, if parked)
        } else if (r < 0.95) {
          // removeDatabase of an open database: refused.
          const err = await settles(`${where()}: removeDatabase of open ${name}`, removeDatabaseOn(env, name, 50)).then(
            () => 'removed',
            (e: unknown) => codeOf(e, `${where()}: removeDatabase of open ${name}`),
          );
          if (err !== 'DatabaseLocked') throw new Error(`${where()}: removeDatabase of an open database: ${err}`);
        } else {
          crash();
        }
      }
      checkViews();
      checkHandles();
    }
    // The end: faults off, every database reopened and checked.
    note('the end');
    plan = undefined;
    // Every one closed first: three open at once may need more handles than the budget.
    for (const [name, m] of models) if (m.db !== undefined) closeModel(name, m);
    for (const [name, m] of models) {
      await openModel(name);
      if (models.get(name)!.db === undefined) throw new Error(`seed ${seed}: ${name} did not reopen without faults`);
      closeModel(name, m);
      checkViews();
    }
    // Every database closed and let go of: nothing open, nothing counted.
    for (const name of NAMES) releaseParked(name);
    await sleep(20);
    checkHandles(true);
    if (realmHandles(env.locks).held !== 0)
      throw new Error(`seed ${seed}: every database closed, and the budget still counts ${realmHandles(env.locks).held} handles`);
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    throw new Error(`${message}\nthe last of the sequence:\n${trace.slice(-40).join('\n')}`, { cause: e });
  } finally {
    plan = undefined;
    for (const [name, m] of models) {
      try {
        m.db?.close();
      } catch {
        // Reported above if it mattered.
      }
      releaseParked(name);
    }
    for (const h of held) h.result?.release();
  }
}

const seeds: number[] = process.env.SILT_SEED
  ? [Number(process.env.SILT_SEED)]
  : Array.from({ length: SOAK ? SEQUENCES_SOAK : SEQUENCES_CI }, (_, i) => 1000 + i);

test(
  `worker layer: ${seeds.length} seeded sequences of ${OPS} operations with injected OPFS failures keep views, acknowledged writes and errors as promised`,
  async () => {
    const started = performance.now();
    // Every seed runs; the failures are listed together at the end.
    const failures: string[] = [];
    for (const seed of seeds) {
      try {
        await runSequence(seed);
      } catch (e) {
        failures.push(e instanceof Error ? e.message : String(e));
      }
      figures.sequences++;
    }
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `worker-layer property: ${figures.sequences} sequences, ${figures.ops} operations, ${figures.injected} injected failures, ` +
        `${figures.crashes} crashes, ${figures.reopened} opens, handles at most ${(100 * figures.handlesPeak).toFixed(0)}% of the budget, imports ${figures.imports.ok} ok / ${figures.imports.failed} failed, ` +
        `${figures.viewsChecked} view checks (${figures.viewsDetached} views found detached), errors ${JSON.stringify(Object.fromEntries(figures.errors))}, ` +
        `${failures.length} failed (seeds ${failures.map((f) => /seed (\d+)/.exec(f)?.[1]).join(', ') || 'none'}), ${seconds.toFixed(1)} s`,
    );
    expect(failures, `${failures.length} of ${seeds.length} sequences failed:\n\n${failures.join('\n\n')}`).toEqual([]);
    // The view checks compared bytes, not only found views detached.
    expect(figures.viewsChecked).toBeGreaterThan(figures.viewsDetached);
  },
  SOAK ? 3_600_000 : 120_000,
);
