// The browser side of tests/e2e/bad-input.spec.ts: random sequences of
// calls through connect() (bad arguments of every type, misused snapshots,
// iterators and batches, calls after close) interleaved with valid writes
// mirrored in a Map oracle. Every call resolves or rejects with a SiltError
// whose code is known; the worker never dies (a put and a get still work
// after the sequence); the database equals the oracle and verifies.
// A smaller sibling of js/test/bad-input.test.ts (which uses fast-check in
// Node); here a seeded generator keeps failures reproducible.

const enc = new TextEncoder();
const hex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');

/** xorshift32: the same seed gives the same sequence. */
function rng(seed) {
  let x = seed >>> 0 || 1;
  const next = () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
  return { next, int: (n) => Math.floor(next() * n), pick: (xs) => xs[Math.floor(next() * xs.length)] };
}

function detached(n) {
  const v = new Uint8Array(n);
  structuredClone(v.buffer, { transfer: [v.buffer] });
  return v;
}

const JUNK = [
  () => undefined,
  () => null,
  () => 42,
  () => Number.NaN,
  () => true,
  () => '',
  () => '\ud800',
  () => 10n,
  () => Symbol('s'),
  () => () => 1,
  () => ({}),
  () => [1, 2],
  () => new ArrayBuffer(4),
  () => new DataView(new ArrayBuffer(4)),
  () => new Int16Array(2),
  () => new Uint8ClampedArray(2),
  () => new Float64Array(1),
  () => detached(8),
  () => new Uint8Array(64 * 1024 + 1),
  () => new Uint8Array(0),
];
const NAMES = ['a', 'b', 'ba', 'k1', 'k2', 'k10', 'zz', '\u00e9', 'm'];

export async function runSequences({ seed, sequences, steps }) {
  const { connect, WriteBatch, SiltError, SILT_ERROR_CODES } = await import('/siltdb/dist/index.js');
  // Every code a SiltError may carry, but Internal (a trap, or a dead worker: a bug) and InitFailed.
  const KNOWN = new Set(SILT_ERROR_CODES.filter((c) => c !== 'Internal' && c !== 'InitFailed'));
  const r = rng(seed);
  let calls = 0;
  const problems = [];

  const junk = () => r.pick(JUNK)();
  const validKey = () => (r.next() < 0.6 ? r.pick(NAMES) : enc.encode(r.pick(NAMES)));
  const anyKey = () => (r.next() < 0.8 ? validKey() : junk());
  const validValue = () => (r.next() < 0.95 ? crypto.getRandomValues(new Uint8Array(r.int(100))) : new Uint8Array(70_000).fill(r.int(256)));
  const anyValue = () => (r.next() < 0.85 ? validValue() : junk());
  const keyOf = (k) => {
    if (typeof k === 'string') return k.isWellFormed() ? enc.encode(k) : undefined;
    if (!(k instanceof Uint8Array)) return undefined;
    if (k.byteLength === 0) return k.buffer.detached ? undefined : new Uint8Array(0);
    return k.slice();
  };
  const writable = (k) => k !== undefined && k.length <= 65536;
  const describe = (x) => {
    try {
      return typeof x === 'symbol'
        ? x.toString()
        : typeof x === 'bigint'
          ? `${x}n`
          : x instanceof Uint8Array
            ? `Uint8Array(${x.length})`
            : (JSON.stringify(x) ?? String(x));
    } catch {
      return Object.prototype.toString.call(x);
    }
  };

  /** One call: its value, or the SiltError it threw; anything else is a problem. */
  async function attempt(what, f) {
    calls++;
    try {
      return { ok: true, value: await f() };
    } catch (e) {
      if (!(e instanceof SiltError) || !KNOWN.has(e.code) || !e.message) {
        problems.push(`${what}: ${e instanceof SiltError ? `code ${e.code}` : `${e?.name}: ${e?.message}`}`);
        return { ok: false, error: e };
      }
      return { ok: false, error: e };
    }
  }
  function expectFail(what, res, codes) {
    if (res.ok) problems.push(`${what} worked`);
    else if (res.error instanceof SiltError && !codes.includes(res.error.code))
      problems.push(`${what} threw ${res.error.code}, expected ${codes.join('/')}: ${res.error.message}`);
  }

  for (let s = 0; s < sequences; s++) {
    const name = `bad-input-${seed}-${s}`;
    const db = await connect(name, { writeBufferSize: 64 * 1024 });
    const oracle = new Map();
    const snaps = [];
    const apply = (ok, fn) => ok && fn();
    for (let i = 0; i < steps; i++) {
      const op = r.int(15);
      const what = `seq ${s} step ${i} op ${op}`;
      globalThis.badInputAt = what; // where a hang stopped, for whoever debugs it
      if (op <= 3) {
        const key = anyKey();
        const value = anyValue();
        const k = keyOf(key);
        const valid = writable(k) && keyOf(value) !== undefined && value instanceof Uint8Array;
        const res = await attempt(`${what} put(${describe(key)})`, () => db.put(key, value));
        if (res.ok !== valid) problems.push(`${what} put(${describe(key)}, ${describe(value)}) ${res.ok ? 'worked' : `threw ${res.error?.code}`}`);
        apply(res.ok, () => oracle.set(hex(k), value.slice()));
      } else if (op === 4) {
        const key = anyKey();
        const k = keyOf(key);
        const res = await attempt(`${what} delete`, () => db.delete(key));
        if (res.ok !== writable(k)) problems.push(`${what} delete(${describe(key)}) ${res.ok ? 'worked' : 'failed'}`);
        apply(res.ok, () => oracle.delete(hex(k)));
      } else if (op === 5) {
        const a = anyKey();
        const b = anyKey();
        const ka = keyOf(a);
        const kb = keyOf(b);
        const res = await attempt(`${what} deleteRange`, () => db.deleteRange(a, b, r.next() < 0.2 ? { sync: junk() } : undefined));
        apply(res.ok, () => {
          for (const k of [...oracle.keys()]) if (k >= hex(ka) && k < hex(kb)) oracle.delete(k);
        });
      } else if (op === 6) {
        const batch = new WriteBatch();
        const effects = [];
        let valid = true;
        for (let j = r.int(6); j > 0; j--) {
          const key = anyKey();
          const value = anyValue();
          const res = await attempt(`${what} batch.put`, () => batch.put(key, value));
          if (res.ok) {
            const k = keyOf(key);
            valid &&= writable(k);
            const v = value.slice();
            effects.push(() => oracle.set(hex(k), v));
          }
        }
        const res = await attempt(`${what} write`, () => db.write(r.next() < 0.1 ? junk() : batch));
        apply(res.ok, () => {
          for (const f of effects) f();
        });
        if (res.ok && !valid) problems.push(`${what} a batch with a bad key was written`);
        // A batch is not used up by a write: again, the same result.
        const again = await attempt(`${what} write again`, () => db.write(batch));
        apply(again.ok, () => {
          for (const f of effects) f();
        });
      } else if (op === 7) {
        const key = anyKey();
        const k = keyOf(key);
        const snap = r.next() < 0.3 && snaps.length ? r.pick(snaps) : undefined;
        const res = await attempt(`${what} get`, () => db.get(key, snap ? { snapshot: snap.s } : r.next() < 0.1 ? { snapshot: junk() } : undefined));
        if (res.ok) {
          const want = (snap ? snap.view : oracle).get(hex(k));
          const same = res.value === undefined ? want === undefined : want !== undefined && hex(res.value) === hex(want);
          if (!same) problems.push(`${what} get(${describe(key)}) gave the wrong value`);
          if (snap?.released) problems.push(`${what} a released snapshot was read`);
        } else if (snap?.released) {
          expectFail(`${what} get on a released snapshot`, res, writable(k) ? ['Released'] : ['Released', 'InvalidArgument']);
        }
      } else if (op === 8) {
        const keys = r.next() < 0.1 ? junk() : Array.from({ length: r.int(10) }, anyKey);
        const res = await attempt(`${what} multiGet`, () => db.multiGet(keys));
        if (res.ok) {
          keys.forEach((key, j) => {
            const want = oracle.get(hex(keyOf(key)));
            const got = res.value.get(j);
            if ((got === undefined) !== (want === undefined) || (got && hex(got) !== hex(want))) problems.push(`${what} multiGet [${j}] wrong`);
          });
        }
      } else if (op === 9) {
        const res = await attempt(`${what} snapshot`, () => db.snapshot());
        if (res.ok) snaps.push({ s: res.value, view: new Map(oracle), released: false });
        if (snaps.length && r.next() < 0.5) {
          const snap = r.pick(snaps);
          await attempt(`${what} release`, () => snap.s.release());
          await attempt(`${what} release twice`, () => snap.s.release());
          snap.released = true;
          expectFail(`${what} a released snapshot in multiGet`, await attempt(what, () => db.multiGet(['a'], { snapshot: snap.s })), ['Released']);
        }
        expectFail(`${what} a fake snapshot`, await attempt(what, () => db.get('a', { snapshot: { id: 1 } })), ['InvalidArgument']);
      } else if (op === 10) {
        const options = {};
        for (const b of ['gt', 'gte', 'lt', 'lte']) if (r.next() < 0.25) options[b] = anyKey();
        if (r.next() < 0.3) options.reverse = r.next() < 0.7 ? true : junk();
        if (r.next() < 0.2) options.batchSize = r.next() < 0.5 ? 1 + r.int(4) : junk();
        if (r.next() < 0.1) options.autoRefresh = junk();
        const res = await attempt(`${what} iterator(${describe(Object.keys(options))})`, async () => {
          const out = [];
          const it = db.iterator(options);
          const stop = r.int(8);
          for await (const [k] of it) {
            out.push(hex(k));
            if (out.length === stop) break; // releases it
          }
          return out;
        });
        if (res.ok) {
          const lower = options.gte !== undefined ? hex(keyOf(options.gte)) : options.gt !== undefined ? `${hex(keyOf(options.gt))}00` : undefined;
          const upper = options.lt !== undefined ? hex(keyOf(options.lt)) : options.lte !== undefined ? `${hex(keyOf(options.lte))}00` : undefined;
          const want = [...oracle.keys()].filter((k) => (lower === undefined || k >= lower) && (upper === undefined || k < upper)).sort();
          if (options.reverse === true) want.reverse();
          if (res.value.some((k, j) => k !== want[j])) problems.push(`${what} iterator gave the wrong keys`);
        }
      } else if (op === 11) {
        await attempt(`${what} compactRange`, () => db.compactRange(r.next() < 0.5 ? undefined : anyKey(), r.next() < 0.5 ? undefined : anyKey()));
      } else if (op === 12) {
        const res = await attempt(`${what} statistics`, () => db.statistics());
        if (!res.ok) problems.push(`${what} statistics failed`);
        const v = await attempt(`${what} verify`, () => db.verify());
        if (!v.ok) problems.push(`${what} verify failed: ${v.error?.message}`);
      } else if (op === 13) {
        // Arguments the structured clone refuses, and junk connect options.
        expectFail(`${what} iterator with a function flag`, await attempt(what, () => db.iterator({ reverse: () => 1 }).next()), ['InvalidArgument']);
        const other = await attempt(`${what} connect with junk`, () =>
          connect(r.pick(['x', '', 10n, '../up']), r.pick([{ maxBytes: 'big' }, { blockSize: () => 1 }, { signal: {} }, null, { poolReserve: 1 }])),
        );
        if (other.ok) await other.value.close();
      } else {
        await attempt(`${what} flush`, () => db.flush());
      }
    }

    // The worker is alive and well: a put and a get, then the oracle.
    const alive = await attempt(`seq ${s} put after the sequence`, () => db.put('alive', enc.encode('yes')));
    const back = await attempt(`seq ${s} get after the sequence`, () => db.get('alive'));
    if (!alive.ok || !back.ok || new TextDecoder().decode(back.value) !== 'yes') problems.push(`seq ${s}: the worker no longer answers`);
    oracle.set(hex(enc.encode('alive')), enc.encode('yes'));
    const scanned = [];
    for await (const [k, v] of db.iterator()) scanned.push(`${hex(k)}=${hex(v)}`);
    const want = [...oracle.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => `${k}=${hex(v)}`);
    if (scanned.join() !== want.join()) problems.push(`seq ${s}: the database (${scanned.length} entries) differs from the oracle (${want.length})`);
    const verified = await attempt(`seq ${s} verify`, () => db.verify());
    if (!verified.ok) problems.push(`seq ${s}: verify failed`);
    for (const snap of snaps) await snap.s.release();
    await db.close();
    // Every call after close is refused with Closed.
    for (const [what, f] of [
      ['put', () => db.put('a', new Uint8Array(1))],
      ['get', () => db.get('a')],
      ['multiGet', () => db.multiGet(['a'])],
      ['snapshot', () => db.snapshot()],
      ['statistics', () => db.statistics()],
      ['verify', () => db.verify()],
      ['flush', () => db.flush()],
      ['iterator', () => db.iterator().next()],
    ]) {
      expectFail(`seq ${s} ${what} after close`, await attempt(what, f), ['Closed']);
    }
  }
  return { calls, sequences, problems: problems.slice(0, 20), problemCount: problems.length };
}
