// A model-based test of connect()'s page cache (src/tabs/page-cache.ts,
// docs/tabs.md "The page cache"): three tabs, each connected with a small
// page cache (entries come and go), read and write a handful of keys with
// every kind of write (puts, deletes, merges, batches, range deletes,
// clears, transactions, ingests, imports), reads issued alone and together
// with writes, while tabs are killed (the leading one too), closed and
// opened; messages, lock grants and timers in an order the seed picks.
// The real src/tabs/ modules in the simulated browser of tabs-world.ts, on
// a real in-memory database whose every state is recorded (the oracle: each
// key's value at each sequence number). Each read is checked as it settles:
// - its value is the key's value at some sequence number from the tab's
//   floor at the time it was issued up to the latest: never a value older
//   than what the tab had seen before (a read that settled), nor older than
//   its own acknowledged writes (a write acknowledged raises the floor to
//   the latest sequence number when it was sent: every record up to its own
//   came before its answer);
// and once faults stop and every message has arrived, every tab still open
// reads every key as the database has it (no entry left stale).
// SILT_CACHE_MODEL_SCHEDULES sets the count (default 600, 6 to 20 s on the 2-core machine; 20,000 with
// SILT_SOAK=1), SILT_MODEL_SEED the first seed.
import { describe, expect, test } from 'vitest';
import { Database } from '../src/local/database.js';
import { Transaction } from '../src/local/transaction.js';
import type { RemoteDatabase } from '../src/tabs/remote-database.js';
import { bytes } from './helpers.js';
import { imageOf, rocksdbArchiveOf, runSeeds } from './model-runs.js';
import { Origin, type Tab } from './tabs-harness.js';

const SOAK = process.env.SILT_SOAK === '1';
/** The test's watchdog: 10 minutes, a day at soak size (a hang check, not a speed check). */
const TIMEOUT_MS = SOAK ? 24 * 3_600_000 : 600_000;
const SCHEDULES = Number(process.env.SILT_CACHE_MODEL_SCHEDULES ?? (SOAK ? 20_000 : 600));
const FIRST_SEED = Number(process.env.SILT_MODEL_SEED ?? 1);

const KEYS = ['k0', 'k1', 'k2', 'k3', 'k4', 'k5'];
const HOT = ['k0', 'k4'];
const text = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));

interface TabState {
  tab: Tab;
  db: RemoteDatabase | undefined;
  gone: boolean;
  /** The sequence number every read issued from now on must be at or after. */
  floor: number;
  ops: number;
  /** Its calls not settled yet. */
  pending: number;
}

/** Each key's values, by the sequence number from which each holds (an import's between two numbers). */
class History {
  #values = new Map<string, { seq: number; value: string | undefined }[]>();
  constructor(readonly db: Database) {
    for (const k of KEYS) this.#values.set(k, [{ seq: 0, value: undefined }]);
  }

  /** Records the database's state now, as of sequence number `seq`. */
  observe(seq = this.db.latestSequence()): void {
    for (const k of KEYS) {
      const h = this.#values.get(k)!;
      const value = text(this.db.get(k));
      if (h.at(-1)!.value !== value) h.push({ seq, value });
    }
  }

  /** The first sequence number from `from` to `to` at which `key` held `value` (`null`: any value), if any. */
  firstAt(key: string, value: string | undefined | null, from: number, to: number): number | undefined {
    return this.firstWhere(key, (v) => (value === null ? v !== undefined : v === value), from, to);
  }

  /** The first sequence number from `from` to `to` at which `key`'s value passed `test`, if any. */
  firstWhere(key: string, test: (value: string | undefined) => boolean, from: number, to: number): number | undefined {
    const h = this.#values.get(key)!;
    for (let i = 0; i < h.length; i++) {
      const start = h[i]!.seq;
      const end = i + 1 < h.length ? h[i + 1]!.seq : Number.POSITIVE_INFINITY;
      // Held on [start, end).
      if (test(h[i]!.value) && end > from && start <= to) return Math.max(start, from);
    }
    return undefined;
  }
}

/** Records every state the database goes through (its writes, ingests, commits and imports). */
function instrument(db: Database, history: History): () => void {
  const write = db.write.bind(db);
  const ingest = db.ingest.bind(db);
  (db as { write: Database['write'] }).write = ((b, o) => {
    const r = write(b, o);
    history.observe();
    return r;
  }) as Database['write'];
  (db as { ingest: Database['ingest'] }).ingest = (async (entries, o) => {
    const r = await ingest(entries, o);
    history.observe();
    return r;
  }) as Database['ingest'];
  const commitWith = Transaction.commitWith;
  Transaction.commitWith = (tx, options, key, value) => {
    commitWith(tx, options, key, value);
    history.observe();
  };
  const inner = Database.internals(db as Database<unknown, unknown>).inner;
  const finish = inner.importFinish.bind(inner);
  (inner as { importFinish: typeof finish }).importFinish = () => {
    const before = db.latestSequence();
    const r = finish();
    // At the sequence number the import raised the database's to; if it
    // raised none, between that one and the next (its tables keep their own).
    const latest = db.latestSequence();
    history.observe(latest > before ? latest : latest + 0.5);
    return r;
  };
  return () => {
    Transaction.commitWith = commitWith;
  };
}

/** Reads the caches answered, over every schedule. */
let hits = 0;

async function schedule(seed: number, image: Uint8Array, archives: [string, Uint8Array][]): Promise<string[]> {
  /** Archives of RocksDB tables not yet ingested in this schedule. */
  let archive = 0;
  const o = await Origin.create(seed, 'random', { mergeOperator: 'append' });
  const w = o.world;
  const rng = w.rng;
  const bad: string[] = [];
  const history = new History(o.db);
  const restore = instrument(o.db, history);
  const tabs: TabState[] = [];
  let token = 0;
  const latest = () => o.db.latestSequence();

  const open = () => {
    const s: TabState = { tab: o.tab(), db: undefined, gone: false, floor: 0, ops: 10 + rng.int(15), pending: 0 };
    tabs.push(s);
    const capacity = rng.chance(0.5) ? 600 : 4_000;
    o.connect(s.tab, { pageCacheCapacity: capacity }, !rng.chance(0.25)).then(
      (db) => {
        if (!s.gone) s.db = db;
      },
      () => {},
    );
  };

  /** A read of `key` by `s`, checked when it settles. */
  const read = (s: TabState, db: RemoteDatabase, key: string, has = false) => {
    const floor = s.floor;
    s.pending++;
    const p = has ? db.has(key).then((found) => (found ? null : undefined)) : db.get(key).then(text);
    p.then(
      (value) => {
        s.pending--;
        if (s.gone) return;
        const now = latest();
        if (value === null) {
          // has() found a value: any, held from the floor on.
          const at = history.firstAt(key, null, floor, now);
          if (at === undefined) bad.push(`${s.tab.name}: has(${key}) found a value the key did not hold from ${floor} to ${now}`);
          else s.floor = Math.max(s.floor, at);
          return;
        }
        const at = history.firstAt(key, value, floor, now);
        if (at === undefined)
          bad.push(`${s.tab.name}: ${has ? 'has' : 'get'}(${key}) read ${value}, which it did not hold from ${floor} (the tab's floor) to ${now}`);
        else s.floor = Math.max(s.floor, at);
      },
      (e: unknown) => {
        s.pending--;
        if (!s.gone && !['Closed', 'Internal', 'InitFailed'].includes((e as { code?: string }).code ?? ''))
          bad.push(`${s.tab.name}: a read failed: ${String(e)}`);
      },
    );
  };

  /**
   * A write by `s`: acknowledged, every read issued after must be at or
   * past its own sequence number: the first at which `key` held what
   * `wrote` tells (a token of this write), else (a delete, a range) the
   * latest when it was sent, which is at or below it.
   */
  const wrote = (s: TabState, p: Promise<unknown>, mayFail = false, key?: string, written?: (v: string | undefined) => boolean) => {
    const sent = latest();
    s.pending++;
    p.then(
      () => {
        s.pending--;
        const own = key === undefined ? undefined : history.firstWhere(key, written!, sent, latest());
        s.floor = Math.max(s.floor, own ?? sent);
      },
      (e: unknown) => {
        s.pending--;
        const code = (e as { code?: string }).code ?? '';
        if (!s.gone && !mayFail && !['Closed', 'Internal', 'InitFailed'].includes(code)) bad.push(`${s.tab.name}: a write failed: ${String(e)}`);
      },
    );
  };

  /** A read, a write of its key and a read again, issued together; and a read once the write is acknowledged. */
  const readWriteRead = (s: TabState, db: RemoteDatabase) => {
    const [k, v] = [key(), `p${++token}`];
    read(s, db, k);
    const put = db.put(k, bytes(v));
    wrote(s, put, false, k, (x) => x === v);
    read(s, db, k);
    // (Its value, or a later one.)
    put.then(
      () => {
        if (!s.gone) read(s, db, k);
      },
      () => {},
    );
  };

  // Half the calls on two hot keys: reads and writes of one key meet more often.
  const key = () => (rng.chance(0.5) ? rng.pick(HOT) : rng.pick(KEYS));
  const ops: ((s: TabState, db: RemoteDatabase) => void)[] = [
    (s, db) => read(s, db, key()),
    (s, db) => read(s, db, key()),
    (s, db) => read(s, db, key()),
    (s, db) => read(s, db, key()),
    (s, db) => read(s, db, key()),
    (s, db) => read(s, db, key(), true),
    (s, db) => {
      // Reads issued together: one message, one batched MultiGet.
      for (let i = 1 + rng.int(4); i > 0; i--) read(s, db, key());
    },
    (s, db) => {
      const [k, v] = [key(), `p${++token}`];
      wrote(s, db.put(k, bytes(v)), false, k, (x) => x === v);
    },
    (s, db) => wrote(s, db.delete(key())),
    (s, db) => {
      const [k, v] = [key(), `m${++token};`];
      wrote(s, db.merge(k, bytes(v)), false, k, (x) => x?.endsWith(v) === true);
    },
    readWriteRead,
    readWriteRead, // (twice as often)
    (s, db) => {
      const [k, v, d] = [key(), `b${++token}`, key()];
      wrote(s, db.write(db.batch().put(k, bytes(v)).delete(d)), false, k, (x) => (k === d ? x === undefined : x === v));
    },
    (s, db) => wrote(s, db.deleteRange('k1', 'k4')),
    (s, db) => wrote(s, db.clear({ gte: 'k3' })),
    (s, db) => {
      const t = ++token;
      wrote(
        s,
        db.transaction(
          async (tx) => {
            const v = await tx.getForUpdate('k0');
            tx.put('k0', bytes(`${text(v) ?? ''}x${t}`.slice(-12)));
          },
          { retries: 3 },
        ),
        true, // (Conflict, LeaderChanged)
        'k0',
        (x) => x?.endsWith(`x${t}`) === true,
      );
    },
    (s, db) => {
      wrote(
        s,
        db.transaction(
          async (tx) => {
            // (Nothing written: the floor is the latest when it was sent.)
            await tx.get('k1');
          },
          { retries: 3 },
        ),
        true, // (Conflict, LeaderChanged)
      );
    },
    (s, db) => {
      const t = ++token;
      wrote(
        s,
        db.ingest([
          ['k4', bytes(`i${t}`)],
          ['k5', bytes(`i${t}`)],
        ] as [string, Uint8Array][]),
        false,
        'k4',
        (x) => x === `i${t}`,
      );
    },
    (s, db) => wrote(s, db.import([image]), true), // (Busy, InvalidArgument, LeaderChanged)
    (s, db) => {
      // RocksDB tables (each archive once a schedule): a recorded write of
      // the connection, its keys' values from the tables.
      const a = archives[archive++];
      if (a === undefined) return;
      wrote(s, db.ingestRocksdb(a[1]), false, 'k4', (x) => x === a[0]);
    },
  ];

  for (let i = 0; i < 3; i++) open();
  let faults = rng.int(3);
  for (let loops = 0; loops < 4_000; loops++) {
    const live = tabs.filter((s) => !s.gone);
    const ready = live.filter((s) => s.db !== undefined && s.ops > 0);
    const r = rng.next();
    if (ready.length > 0 && r < 0.2) {
      const s = rng.pick(ready);
      s.ops--;
      rng.pick(ops)(s, s.db!);
    } else if (faults > 0 && r < 0.22) {
      faults--;
      const leading = live.find((s) => s.tab === o.leading);
      const victim = rng.chance(0.6) && leading !== undefined ? leading : rng.pick(live);
      victim.gone = true;
      if (rng.chance(0.5)) o.kill(victim.tab);
      else void victim.db?.close().catch(() => {});
      open();
    }
    const moved = await w.step(w.now + 30_000);
    if (!moved && ready.length === 0 && live.every((s) => (s.db === undefined || s.ops === 0) && s.pending === 0)) break;
  }
  await w.run(300_000);

  // Every record has arrived: each tab still open reads each key as the database has it.
  const want = new Map(KEYS.map((k) => [k, text(o.db.get(k))]));
  const finals: Promise<void>[] = [];
  for (const s of tabs.filter((t) => !t.gone && t.db !== undefined)) {
    for (const k of KEYS) {
      finals.push(
        s.db!.get(k).then(
          (v) => {
            if (text(v) !== want.get(k)) bad.push(`${s.tab.name}: at the end, get(${k}) read ${text(v)}; the database has ${want.get(k)}`);
          },
          (e: unknown) => {
            bad.push(`${s.tab.name}: at the end, get(${k}) failed: ${String(e)}`);
          },
        ),
      );
    }
  }
  // (How many reads the caches answered: a model whose caches never answer tests nothing.)
  for (const s of tabs.filter((t) => !t.gone && t.db !== undefined)) {
    finals.push(
      s.db!.statistics().then(
        (st) => {
          hits += st.pageCache?.hits ?? 0;
        },
        () => {},
      ),
    );
  }
  await w.run(300_000);
  await Promise.all(finals);
  restore();
  if (w.errors.length > 0) bad.push(`listeners threw: ${w.errors.map(String).join('; ')}`);
  for (const s of tabs) if (!s.gone) await w.until(s.db?.close() ?? Promise.resolve());
  await o.dispose();
  return bad.map((b) => `seed ${seed}: ${b}`);
}

describe('the page cache, model-based', () => {
  test(
    `${SCHEDULES} seeded schedules of three tabs with page caches: no read older than what its tab saw or wrote, none stale once records arrived`,
    async () => {
      const image = await imageOf('k0', 'imported');
      const archives: [string, Uint8Array][] = [];
      for (let n = 0; n < 4; n++) {
        archives.push([
          `rocksdb${n}`,
          await rocksdbArchiveOf([
            ['k4', `rocksdb${n}`],
            ['k5', `rocksdb${n}`],
          ]),
        ]);
      }
      const { failures, run, seconds } = await runSeeds(FIRST_SEED, SCHEDULES, (seed) => schedule(seed, image, archives));
      console.log(
        `page cache model: ${run} schedules in ${seconds.toFixed(1)} s (seeds ${FIRST_SEED}..${FIRST_SEED + run - 1}), ${hits} reads from the caches`,
      );
      expect(failures).toEqual([]);
      expect(hits).toBeGreaterThan(run);
    },
    TIMEOUT_MS,
  );
});
