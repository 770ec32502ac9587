// What the worker API has beyond the scenarios both APIs share
// (scenarios/index.js): synchronous iteration and its `released` flag,
// background work and statistics, on an in-memory database in Node.
import { describe, expect, test } from 'vitest';
import type { Entry } from '../src/index.js';
import { defaultBlockCacheCapacity } from '../src/local/open.js';
import { bytes, caught, fresh, rejected, text } from './helpers.js';

const keys = (entries: Entry[]) => entries.map(([k]) => text(k));

describe('iterators in a worker', () => {
  async function abc() {
    const db = await fresh();
    for (const k of ['a', 'b', 'c', 'd', 'e']) db.put(k, bytes(k.toUpperCase()));
    return db;
  }

  test('iterate synchronously with for...of, in batches of any size', async () => {
    const db = await abc();
    const got = [...db.iterator({ gt: 'a', lte: 'd', batchSize: 2 })];
    expect(keys(got)).toEqual(['b', 'c', 'd']);
    expect(got.map(([, v]) => text(v))).toEqual(['B', 'C', 'D']);
  });

  test('are async-iterable, and let timers run between batches', async () => {
    const db = await fresh();
    for (let i = 0; i < 50; i++) db.put(`k${String(i).padStart(2, '0')}`, bytes(String(i)));
    let ticks = 0;
    const timer = setInterval(() => ticks++, 0);
    const seen: string[] = [];
    for await (const [k] of db.iterator({ batchSize: 5 })) seen.push(text(k)!);
    clearInterval(timer);
    expect(seen.length).toBe(50);
    expect(seen[49]).toBe('k49');
    expect(ticks).toBeGreaterThan(0);
  });

  test('say whether they let go (released): once a loop breaks out, sync or async, once exhausted, and once their database closes', async () => {
    const db = await abc();
    const it = db.iterator();
    for (const [k] of it) if (text(k) === 'b') break;
    expect(it.released).toBe(true);
    expect(it.next().done).toBe(true); // closed by the loop, like a generator
    const it2 = db.iterator();
    for await (const [k] of it2) if (text(k) === 'b') break;
    expect(it2.released).toBe(true);
    const exhausted = db.iterator();
    expect([...exhausted].length).toBe(5);
    expect(exhausted.released).toBe(true);
    const open = db.iterator({ batchSize: 2 });
    open.next();
    expect(open.released).toBe(false);
    db.close();
    expect(open.released).toBe(true);
    expect(caught(() => open.next()).code).toBe('Closed');
  });
});

describe('background work and statistics', () => {
  test('the pump flushes full memtables between calls, without being asked', async () => {
    const db = await fresh({ writeBufferSize: 64 * 1024 });
    const value = new Uint8Array(1000);
    for (let i = 0; i < 300; i++) {
      db.put(`k${i}`, value);
      if (i % 20 === 0) await new Promise((r) => setTimeout(r, 0)); // like requests arriving
    }
    await db.idle();
    const s = db.statistics();
    expect(s.background.steps).toBeGreaterThan(0);
    expect(s.tickers['silt.flushes']).toBeGreaterThan(0);
    expect(s.properties.immutableMemtables).toBe(0);
    expect(s.properties.filesPerLevel.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    expect(s.background.lastError).toBeUndefined();
  });

  test('reads alone get a file that lookups search in vain compacted (read-triggered compaction)', async () => {
    // No bloom filters: every lookup of a last-level key searches the L0 file.
    const db = await fresh({ writeBufferSize: 64 * 1024, bloomBitsPerKey: 0 });
    const key = (i: number) => `k${String(i).padStart(4, '0')}`;
    for (let i = 0; i < 2000; i++) db.put(key(i), new Uint8Array(100).fill(1));
    await db.compactRange();
    for (let i = 0; i < 2000; i += 10) db.put(`${key(i)}x`, new Uint8Array(100).fill(2));
    db.flush();
    await db.idle();
    expect(db.statistics().properties.filesPerLevel[0]).toBe(1);
    // Only reads from here on: the package lets background work look now
    // and then, and it compacts the L0 file the lookups were charging.
    for (let round = 0; round < 200 && db.statistics().tickers['silt.compaction.read.triggered'] === 0; round++) {
      for (let i = 1; i < 2000; i += 7) db.get(key(i));
      await new Promise((r) => setTimeout(r, 20));
    }
    const s = db.statistics();
    expect(s.tickers['silt.compaction.read.wanted']).toBe(1);
    expect(s.tickers['silt.compaction.read.triggered']).toBe(1);
    expect(s.properties.filesPerLevel[0]).toBe(0);
    expect(text(db.get('k0010x'))).toBe(String.fromCharCode(2).repeat(100));
  });

  test('readTriggeredCompaction: false leaves the file lookups search in vain where it is', async () => {
    const db = await fresh({ writeBufferSize: 64 * 1024, bloomBitsPerKey: 0, readTriggeredCompaction: false });
    const key = (i: number) => `k${String(i).padStart(4, '0')}`;
    for (let i = 0; i < 2000; i++) db.put(key(i), new Uint8Array(100));
    await db.compactRange();
    for (let i = 0; i < 2000; i += 10) db.put(`${key(i)}x`, new Uint8Array(100));
    db.flush();
    for (let round = 0; round < 5; round++) {
      for (let i = 1; i < 2000; i += 7) db.get(key(i));
      await db.idle();
    }
    const s = db.statistics();
    expect(s.tickers['silt.compaction.read.wanted']).toBe(0);
    expect(s.properties.filesPerLevel[0]).toBe(1);
    const refused = await rejected(fresh({ readTriggeredCompaction: 'yes' as unknown as boolean }));
    expect(refused.code).toBe('InvalidArgument');
    expect(refused.message).toMatch(/readTriggeredCompaction/);
  });

  test('a row cache answers repeated reads, and a deleteRange after them hides the keys at once', async () => {
    const db = await fresh({ rowCacheCapacity: 1 << 20 });
    const key = (i: number) => `k${String(i).padStart(3, '0')}`;
    for (let i = 0; i < 100; i++) db.put(key(i), bytes(`value ${i}`));
    db.flush();
    const before = db.snapshot();
    const rowHits = () => db.statistics().tickers['rocksdb.row.cache.hit'] ?? 0;
    try {
      // A key's entry is made at its second miss (the doorkeeper), read
      // from the cache from then on.
      for (let round = 0; round < 3; round++) {
        for (let i = 0; i < 100; i++) expect(text(db.get(key(i)))).toBe(`value ${i}`);
        const many = db.multiGet(['k001', 'k050', 'nope']);
        expect([text(many.get(0)), text(many.get(1)), many.get(2)]).toEqual(['value 1', 'value 50', undefined]);
        many.release();
        if (round === 0) expect(rowHits()).toBeLessThanOrEqual(2);
      }
      expect(rowHits()).toBeGreaterThanOrEqual(95);
      expect(db.statistics().properties.rowCacheUsage).toBeGreaterThan(0);
      const hits = rowHits();
      db.deleteRange('k000', 'k050');
      for (let i = 0; i < 100; i++) {
        // Cached entries, with the tombstone applied outside them: gone now,
        // there at the snapshot from before it.
        expect(text(db.get(key(i)))).toBe(i < 50 ? undefined : `value ${i}`);
        expect(text(db.get(key(i), { snapshot: before }))).toBe(`value ${i}`);
      }
      expect(rowHits() - hits).toBeGreaterThanOrEqual(190);
    } finally {
      before.release();
    }
    expect((await rejected(fresh({ rowCacheCapacity: -1 }))).code).toBe('InvalidArgument');
  });

  test('the pump works in short slices: reads run between them while a compaction runs', async () => {
    const db = await fresh({ writeBufferSize: 64 * 1024, maxWriteBufferNumber: 32, blockSize: 1024 });
    // Writes pay for their own flushes and compactions as they go, so the
    // backlog the pump drains in slices is a manual compaction of it all.
    for (let i = 0; i < 16000; i++) db.put(`k${String(i).padStart(5, '0')}`, new Uint8Array(100).fill(i % 256));
    const stepsBefore = db.statistics().background.steps;
    let running = true;
    let readsDuringDrain = 0;
    const timer = setInterval(() => {
      if (running && db.get('k00042')?.[0] === 42) readsDuringDrain++;
    }, 0);
    await db.compactRange();
    running = false;
    clearInterval(timer);
    const s = db.statistics();
    expect(s.properties.immutableMemtables).toBe(0);
    expect(s.properties.filesPerLevel.slice(0, -1).every((n) => n === 0)).toBe(true);
    expect(s.background.steps - stepsBefore).toBeGreaterThan(10);
    // One pump slice is ~4 ms and the timers run between slices; a pump that
    // compacted everything in one task leaves no read in between (0 measured).
    expect(readsDuringDrain).toBeGreaterThanOrEqual(2);
  });

  test('statistics count block cache hits and bloom filter work by their RocksDB names', async () => {
    const db = await fresh();
    for (let i = 0; i < 1000; i++) db.put(`k${i}`, bytes(`v${i}`));
    db.flush();
    for (let i = 0; i < 1000; i++) db.get(`k${i}`);
    for (let i = 0; i < 1000; i++) db.get(`k${i}-missing`); // inside the table's key range
    const s = db.statistics();
    expect(s.tickers['rocksdb.block.cache.hit']).toBeGreaterThan(0);
    expect(s.tickers['rocksdb.bloom.filter.useful']).toBeGreaterThan(900);
    expect(s.tickers['rocksdb.bloom.filter.full.positive']).toBeGreaterThan(0);
    expect(s.properties.filesPerLevel[0]).toBe(1);
    expect(s.persistent).toBe(false);
    expect(s.pool).toBeUndefined();
    expect(s.memory.bytes).toBeGreaterThan(0);
    expect(Object.keys(s.histograms).length).toBeGreaterThan(0);
  });

  test('durations are measured only with timers: true (each is a call out of wasm)', async () => {
    for (const timers of [false, true]) {
      const db = await fresh({ timers });
      for (let i = 0; i < 100; i++) db.put(`k${i}`, bytes(`v${i}`));
      for (let i = 0; i < 100; i++) db.get(`k${i}`);
      const h = db.statistics().histograms;
      expect(h['rocksdb.db.get.micros']?.count, `timers: ${timers}`).toBe(timers ? 100 : 0);
      expect(h['rocksdb.db.write.micros']?.count, `timers: ${timers}`).toBe(timers ? 100 : 0);
    }
  });

  test('compactRange runs in steps: reads are served while it runs, and it resolves once the range is in the last level', async () => {
    const db = await fresh({ writeBufferSize: 64 * 1024, blockSize: 1024 });
    const key = (i: number) => `k${String(i).padStart(5, '0')}`;
    for (let i = 0; i < 20_000; i++) {
      db.put(key(i), new Uint8Array(100).fill(i % 251));
      if (i % 500 === 0) await new Promise((r) => setTimeout(r, 0));
    }
    await db.idle();
    db.deleteRange(key(0), key(15_000));
    let readsDuring = 0;
    let running = true;
    const timer = setInterval(() => {
      if (running && db.get(key(17_000))?.[0] === 17_000 % 251 && db.get(key(5)) === undefined) readsDuring++;
    }, 0);
    const steps = db.statistics().background.steps;
    await db.compactRange();
    running = false;
    clearInterval(timer);
    // A compaction done in one synchronous call leaves no read in between.
    expect(readsDuring).toBeGreaterThanOrEqual(2);
    expect(db.statistics().background.steps - steps).toBeGreaterThan(10);
    const p = db.statistics().properties;
    expect(p.filesPerLevel.slice(0, 6)).toEqual([0, 0, 0, 0, 0, 0]);
    expect(p.filesPerLevel[6]).toBeGreaterThan(0);
    expect(p.backgroundWorkPending).toBe(0);
    expect(db.statistics().tickers['rocksdb.compaction.key.drop.range_del']).toBeGreaterThanOrEqual(15_000);
    expect(keys([...db.iterator()]).length).toBe(5_000);
  });

  test('compactRange reclaims the space of deleted keys', async () => {
    const db = await fresh();
    for (let i = 0; i < 2000; i++) db.put(`k${String(i).padStart(4, '0')}`, new Uint8Array(200).fill(i % 256));
    db.flush();
    const before = db.statistics().properties.tableBytes;
    db.deleteRange('k0000', 'k1900');
    await db.compactRange();
    const after = db.statistics().properties;
    expect(after.tableBytes).toBeLessThan(before / 5);
    expect(keys([...db.iterator()]).length).toBe(100);
  });
});

describe('the default block cache', () => {
  test('is 1/64 of the device memory the browser reports, from 16 to 64 MiB, and 32 MiB when it says nothing', () => {
    const MiB = 1 << 20;
    expect(defaultBlockCacheCapacity(undefined)).toBe(32 * MiB);
    expect(defaultBlockCacheCapacity(Number.NaN)).toBe(32 * MiB);
    expect(defaultBlockCacheCapacity(0)).toBe(32 * MiB);
    expect(defaultBlockCacheCapacity(0.25)).toBe(16 * MiB);
    expect(defaultBlockCacheCapacity(1)).toBe(16 * MiB);
    expect(defaultBlockCacheCapacity(2)).toBe(32 * MiB);
    expect(defaultBlockCacheCapacity(4)).toBe(64 * MiB);
    expect(defaultBlockCacheCapacity(8)).toBe(64 * MiB);
  });

  test('is what a database opened without the option reports; an explicit capacity wins', async () => {
    const dflt = (await fresh()).statistics().properties.blockCacheCapacity;
    const reported = (globalThis as { navigator?: { deviceMemory?: number } }).navigator?.deviceMemory;
    expect(dflt).toBe(defaultBlockCacheCapacity(reported));
    expect((await fresh({ blockCacheCapacity: 1 << 20 })).statistics().properties.blockCacheCapacity).toBe(1 << 20);
  });
});

describe('bytes made in another realm (an iframe)', () => {
  test('keys, values, multiGet keys, merge operands, readU64, import sources and custom encodings take bytes of another realm, which instanceof does not know', async () => {
    const { runInNewContext } = await import('node:vm');
    const { readU64, u64 } = await import('../src/index.js');
    const foreign = (s: string) => runInNewContext(`new Uint8Array([${[...bytes(s)].join(',')}])`) as Uint8Array;
    expect(foreign('k') instanceof Uint8Array).toBe(false);
    const db = await fresh({ mergeOperator: 'u64add' });
    db.put(foreign('key'), foreign('value'));
    expect(text(db.get('key'))).toBe('value');
    expect(text(db.get(foreign('key')))).toBe('value');
    const many = db.multiGet([foreign('key'), 'none', foreign('key')]);
    expect([0, 1, 2].map((i) => many.copy(i) && text(many.copy(i)))).toEqual(['value', undefined, 'value']);
    many.release();
    db.merge('n', runInNewContext(`new Uint8Array([${[...u64(5)].join(',')}])`) as Uint8Array);
    expect(readU64(runInNewContext(`new Uint8Array([${[...db.get('n')!].join(',')}])`) as Uint8Array)).toBe(5n);
    // An import from another realm's ArrayBuffer or bytes; a custom encoding that encodes there.
    const exported = new Uint8Array(await new Response(db.export()).arrayBuffer());
    const copy = runInNewContext(`new Uint8Array(${exported.length})`) as Uint8Array;
    copy.set(exported);
    for (const source of [copy.buffer, copy]) {
      const into = await fresh({ mergeOperator: 'u64add' });
      await into.import(source as ArrayBuffer);
      expect(text(into.get('key'))).toBe('value');
    }
    const foreignText = {
      encode: (s: string) => runInNewContext(`new Uint8Array([${[...bytes(s)].join(',')}])`) as Uint8Array,
      decode: (b: Uint8Array) => new TextDecoder().decode(b),
    };
    const notes = db.sublevel('notes', { valueEncoding: foreignText });
    notes.put('n', 'hello');
    expect(notes.get('n')).toBe('hello');
    // Other typed arrays of that realm are still refused, by name.
    expect(caught(() => db.put('k', runInNewContext('new Uint16Array(2)') as Uint8Array))).toMatchObject({ code: 'InvalidArgument' });
  });
});
