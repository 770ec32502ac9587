// Bad input at every boundary of the public API, as a property: random
// sequences of calls (arguments of every JavaScript type and size, misuse of
// batches, iterators, results and snapshots, every call after close)
// interleaved with valid writes mirrored in a Map oracle. Every call either
// works or throws a `SiltError` with a known code (never a TypeError, a
// RangeError, a trap, or `Internal`), and after every sequence the database
// equals the oracle (a full scan, after a close and reopen on the OPFS
// stand-ins) and `verify()` passes.
//
// The CI runs a ~20 s slice; SILT_SOAK=1 runs ten minutes; a failure
// replays with SILT_BAD_INPUT_SEED and SILT_BAD_INPUT_PATH. Runs write
// `{ calls, sequences, failures }` to target/reliability/bad-input.json.
// The same in Chromium through connect(): tests/e2e/bad-input.spec.ts.
import { mkdirSync, writeFileSync } from 'node:fs';
import fc from 'fast-check';
import { expect, test } from 'vitest';
import {
  type MultiGetResult,
  openMemory,
  PinnedValue,
  SILT_ERROR_CODES,
  SiltError,
  WriteBatch,
  type Database,
  type EntryBatch,
  type EntryIterator,
  type Snapshot,
} from '../src/index.js';
import { openOn, type OpenOptions } from '../src/local/open.js';
import { FakeDirectory, FakeLocks } from './fakes.js';

const SOAK = process.env.SILT_SOAK === '1';
const BUDGET_MS = SOAK ? 600_000 : 20_000;

/** Every code a `SiltError` may carry, but `Internal` (a trap: a bug) and `InitFailed` (the module did load). */
const KNOWN = new Set<string>(SILT_ERROR_CODES.filter((c) => c !== 'Internal' && c !== 'InitFailed'));

let calls = 0;
let sequences = 0;

/** Runs one call: it returns, or throws a SiltError with a known code. */
function attempt<T>(what: string, f: () => T): { ok: true; value: T } | { ok: false; error: SiltError } {
  calls++;
  try {
    return { ok: true, value: f() };
  } catch (e) {
    return { ok: false, error: typed(what, e) };
  }
}

async function attemptAsync<T>(what: string, f: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: SiltError }> {
  calls++;
  try {
    return { ok: true, value: await f() };
  } catch (e) {
    return { ok: false, error: typed(what, e) };
  }
}

function typed(what: string, e: unknown): SiltError {
  if (!(e instanceof SiltError)) {
    throw new Error(`${what} threw ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}, not a SiltError`, { cause: e });
  }
  if (!KNOWN.has(e.code)) throw new Error(`${what} threw a SiltError with code ${e.code}: ${e.message}`, { cause: e });
  if (e.message.length === 0) throw new Error(`${what} threw ${e.code} without a message`);
  return e;
}

// ---------------------------------------------------------------------------
// Arguments

const utf8 = new TextEncoder();
const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');

function isDetached(v: Uint8Array): boolean {
  try {
    new Uint8Array(v.buffer, 0, 0);
    return false;
  } catch {
    return true;
  }
}

/** The bytes siltdb takes a value to be, or undefined if it must refuse it. */
function valueBytes(v: unknown): Uint8Array | undefined {
  if (!(v instanceof Uint8Array)) return undefined;
  if (v.byteLength === 0) return isDetached(v) ? undefined : new Uint8Array(0);
  return v.slice();
}

/** The bytes siltdb takes a key to be, or undefined if it must refuse it. */
function keyOf(k: unknown): Uint8Array | undefined {
  if (typeof k === 'string') return k.isWellFormed() ? utf8.encode(k) : undefined;
  return valueBytes(k);
}

/** A key the engine takes for a write (1 byte to 64 KiB). */
const writable = (k: Uint8Array | undefined): k is Uint8Array => k !== undefined && k.length <= 65536;

function detached(n: number): Uint8Array {
  const view = new Uint8Array(n).fill(1);
  structuredClone(view.buffer, { transfer: [view.buffer] });
  // fast-check cannot print a detached array in a counterexample.
  Object.defineProperty(view, fc.toStringMethod, { value: () => `detached Uint8Array(${n})` });
  return view;
}

/** Keys from a small set (so calls collide), in every form a key may take. */
const KEY_NAMES = ['', 'a', 'b', 'ba', 'c', 'k1', 'k2', 'k10', 'zz', '\u00e9', '\u{1F600}', 'a\u0000b', 'm'];
const validKey = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...KEY_NAMES) },
  { weight: 3, arbitrary: fc.constantFrom(...KEY_NAMES).map((s) => utf8.encode(s)) },
  // A view at an offset into a larger buffer.
  {
    weight: 1,
    arbitrary: fc.constantFrom(...KEY_NAMES).map((s) => {
      const b = utf8.encode(`##${s}##`);
      return b.subarray(2, b.length - 2);
    }),
  },
  { weight: 1, arbitrary: fc.constantFrom(...KEY_NAMES).map((s) => Buffer.from(s)) },
  { weight: 1, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 24 }) },
  { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 12 }) },
);

const SAB = typeof SharedArrayBuffer === 'function';

/** Anything at all, in place of a key, a value, a bound or an option. */
const junk: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    undefined,
    null,
    0,
    -1,
    1.5,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    2 ** 53,
    true,
    false,
    '',
    '\ud800', // a lone surrogate
    'x\udc00y',
    10n,
    Symbol('s'),
    () => 1,
    {},
    [],
    [1, 2, 3],
    new Date(0),
    /re/,
    new Map(),
    Promise.resolve(1),
  ),
  fc
    .constantFrom(
      'ArrayBuffer',
      'SharedArrayBuffer',
      'DataView',
      'Int8Array',
      'Uint8ClampedArray',
      'Int16Array',
      'Uint16Array',
      'Int32Array',
      'Uint32Array',
      'Float32Array',
      'Float64Array',
      'BigInt64Array',
      'BigUint64Array',
      'detached',
      'empty',
      'hugeKey',
      'objectWithLength',
    )
    .map((kind): unknown => {
      switch (kind) {
        case 'ArrayBuffer':
          return new ArrayBuffer(8);
        case 'SharedArrayBuffer':
          return SAB ? new SharedArrayBuffer(8) : new ArrayBuffer(8);
        case 'DataView':
          return new DataView(new ArrayBuffer(8));
        case 'detached':
          return detached(16);
        case 'empty':
          return new Uint8Array(0);
        case 'hugeKey':
          return new Uint8Array(64 * 1024 + 1).fill(7); // one byte past the largest key
        case 'objectWithLength':
          return { length: 3, 0: 1, 1: 2, 2: 3 };
        default: {
          const T = (globalThis as unknown as Record<string, new (n: number) => unknown>)[kind]!;
          return new T(4);
        }
      }
    }),
);

/** A key: valid most of the time, anything otherwise. */
const anyKey = fc.oneof({ weight: 5, arbitrary: validKey }, { weight: 1, arbitrary: junk });

/** A value: bytes of many sizes and backings, or anything. */
const validValue = fc.oneof(
  { weight: 8, arbitrary: fc.uint8Array({ maxLength: 200 }) },
  { weight: 1, arbitrary: fc.integer({ min: 1000, max: 70_000 }).map((n) => new Uint8Array(n).fill(n % 256)) },
  {
    weight: 1,
    arbitrary: fc.uint8Array({ minLength: 1, maxLength: 64 }).map((b) => {
      if (!SAB) return b;
      const v = new Uint8Array(new SharedArrayBuffer(b.length));
      v.set(b);
      return v;
    }),
  },
  { weight: 1, arbitrary: fc.constant(null).map(() => detached(32)) },
  {
    weight: 1,
    arbitrary: fc.uint8Array({ minLength: 4, maxLength: 64 }).map((b) => {
      const r = new Uint8Array(new ArrayBuffer(b.length, { maxByteLength: 4096 }));
      r.set(b);
      return r;
    }),
  },
);
const anyValue = fc.oneof({ weight: 6, arbitrary: validValue }, { weight: 1, arbitrary: junk });

const anyWriteOptions = fc.oneof(
  { weight: 6, arbitrary: fc.constant(undefined) },
  { weight: 2, arbitrary: fc.record({ sync: fc.boolean() }) },
  { weight: 1, arbitrary: junk.map((sync) => ({ sync })) },
  { weight: 1, arbitrary: junk },
  // Misspelled or another library's: refused, never ignored (issue 41).
  { weight: 1, arbitrary: fc.oneof(fc.record({ snyc: fc.boolean() }), fc.record({ sync: fc.boolean(), durability: fc.constant('strict') })) },
);

const anyBatchSize = fc.oneof(fc.constant(undefined), fc.integer({ min: 1, max: 5 }), junk, fc.constantFrom(0, 2 ** 21, 7.5));

/** The names an iterator's options may have (the oracle refuses any other, as siltdb must). */
const ITERATOR_KEYS = ['gt', 'gte', 'lt', 'lte', 'reverse', 'batchSize', 'autoRefresh', 'limit', 'keyEncoding', 'valueEncoding', 'snapshot'];

const knownIteratorOptions = fc.record(
  {
    gt: anyKey,
    gte: anyKey,
    lt: anyKey,
    lte: anyKey,
    reverse: fc.oneof({ weight: 4, arbitrary: fc.boolean() }, { weight: 1, arbitrary: junk }),
    batchSize: anyBatchSize,
    autoRefresh: fc.oneof({ weight: 4, arbitrary: fc.boolean() }, { weight: 1, arbitrary: junk }),
  },
  { requiredKeys: [] },
);

const iteratorOptions: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  { weight: 8, arbitrary: knownIteratorOptions },
  // One name misspelled or another library's (abstract-level's keys, values, fillCache): refused.
  {
    weight: 1,
    arbitrary: fc
      .tuple(knownIteratorOptions, fc.constantFrom('revers', 'Reverse', 'limt', 'keys', 'values', 'fillCache', 'gtee'), fc.boolean())
      .map(([o, name, v]) => ({ ...o, [name]: v })),
  },
);

const junkOpenOptions: fc.Arbitrary<unknown> = fc.oneof(
  junk,
  fc.record(
    {
      createIfMissing: fc.oneof(fc.boolean(), junk),
      errorIfExists: fc.oneof(fc.boolean(), junk),
      sync: fc.oneof(fc.boolean(), junk),
      wait: fc.oneof(fc.boolean(), junk),
      poolReserve: fc.oneof(fc.integer({ min: -5, max: 300 }), junk),
      writeBufferSize: fc.oneof(fc.constantFrom(0, 1, 65_536, 1 << 20, 2 ** 31), junk),
      maxWriteBufferNumber: fc.oneof(fc.integer({ min: -1, max: 70 }), junk),
      blockSize: fc.oneof(fc.constantFrom(0, 255, 256, 4096, 8 << 20), junk),
      blockCacheCapacity: fc.oneof(fc.constantFrom(0, 1, 2 ** 32), junk),
      bloomBitsPerKey: fc.oneof(fc.integer({ min: -2, max: 70 }), junk),
      compression: fc.oneof(fc.constantFrom('lz4', 'none', 'zstd'), junk),
      maxBytes: fc.oneof(fc.constantFrom(0, 1 << 20, 2 ** 53), junk),
      readTriggeredCompaction: fc.oneof(fc.boolean(), junk),
      rowCacheCapacity: fc.oneof(fc.constantFrom(0, 4096, 1 << 20, 2 ** 32), junk),
      transactionSpillBytes: fc.oneof(fc.constantFrom(0, 1, 4096, 2 ** 31), junk),
      signal: fc.oneof(fc.constant(undefined), junk),
    },
    { requiredKeys: [] },
  ),
);

// ---------------------------------------------------------------------------
// Actions

type Action =
  | { t: 'put'; key: unknown; value: unknown; options: unknown }
  | { t: 'delete'; key: unknown; options: unknown }
  | { t: 'deleteRange'; start: unknown; end: unknown; options: unknown }
  | { t: 'batch'; ops: BatchOp[]; huge: number; options: unknown; reuse: boolean }
  | { t: 'writeJunk'; batch: unknown }
  | { t: 'getPinned'; key: unknown; hold: boolean; snapshot: number }
  | { t: 'get'; key: unknown; snapshot: number }
  | { t: 'multiGet'; keys: unknown; batched: unknown; hold: boolean; snapshot: number }
  | { t: 'useHeld'; which: number; index: unknown; release: boolean }
  | { t: 'heldAsInput'; which: number; key: unknown }
  | { t: 'snapshot' }
  | { t: 'releaseSnapshot'; which: number }
  | { t: 'foreignSnapshot' }
  | { t: 'iterate'; options: Record<string, unknown>; snapshot: number; steps: number; keep: boolean; batches: boolean }
  | { t: 'stepIterator'; which: number; steps: number; release: boolean; batches: boolean }
  | { t: 'seekIterator'; which: number; key: unknown }
  | { t: 'flush' }
  | { t: 'compactRange'; begin: unknown; end: unknown }
  | { t: 'idle' }
  | { t: 'statistics' }
  | { t: 'verify' }
  | { t: 'turn' }
  | { t: 'openJunk'; options: unknown; name: unknown }
  | { t: 'reopen' }
  | { t: 'close' }
  | { t: 'transaction'; ops: TxOp[]; interfere: boolean; end: 'commit' | 'abort' | 'leave'; after: boolean; sync: unknown };

type TxOp =
  | { op: 'put' | 'merge'; key: unknown; value: unknown }
  | { op: 'delete'; key: unknown }
  | { op: 'deleteRange'; start: unknown; end: unknown }
  | { op: 'get'; key: unknown; forUpdate: boolean };

type BatchOp = { op: 'put'; key: unknown; value: unknown } | { op: 'delete'; key: unknown } | { op: 'deleteRange'; start: unknown; end: unknown };

const batchOp: fc.Arbitrary<BatchOp> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant('put' as const), key: anyKey, value: anyValue }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('delete' as const), key: anyKey }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('deleteRange' as const), start: validKey, end: validKey }) },
);

const txOp: fc.Arbitrary<TxOp> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constantFrom('put' as const, 'merge' as const), key: anyKey, value: anyValue }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('delete' as const), key: anyKey }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('deleteRange' as const), start: anyKey, end: anyKey }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('get' as const), key: anyKey, forUpdate: fc.boolean() }) },
);

const which = fc.nat({ max: 7 });
const snapshotChoice = fc.oneof({ weight: 3, arbitrary: fc.constant(-1) }, { weight: 1, arbitrary: which });

const action: fc.Arbitrary<Action> = fc.oneof(
  { weight: 12, arbitrary: fc.record({ t: fc.constant('put' as const), key: anyKey, value: anyValue, options: anyWriteOptions }) },
  { weight: 4, arbitrary: fc.record({ t: fc.constant('delete' as const), key: anyKey, options: anyWriteOptions }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('deleteRange' as const), start: anyKey, end: anyKey, options: anyWriteOptions }) },
  {
    weight: 4,
    arbitrary: fc.record({
      t: fc.constant('batch' as const),
      ops: fc.array(batchOp, { maxLength: 8 }),
      huge: fc.oneof({ weight: 9, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1000, max: 20_000 }) }),
      options: anyWriteOptions,
      reuse: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('writeJunk' as const), batch: junk }) },
  { weight: 5, arbitrary: fc.record({ t: fc.constant('getPinned' as const), key: anyKey, hold: fc.boolean(), snapshot: snapshotChoice }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('get' as const), key: anyKey, snapshot: snapshotChoice }) },
  {
    weight: 4,
    arbitrary: fc.record({
      t: fc.constant('multiGet' as const),
      keys: fc.oneof(
        { weight: 5, arbitrary: fc.array(anyKey, { maxLength: 12 }) },
        { weight: 1, arbitrary: junk },
        { weight: 1, arbitrary: fc.constant('3000 keys') },
      ),
      batched: fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 2, arbitrary: fc.boolean() }, { weight: 1, arbitrary: junk }),
      hold: fc.boolean(),
      snapshot: snapshotChoice,
    }),
  },
  { weight: 4, arbitrary: fc.record({ t: fc.constant('useHeld' as const), which, index: fc.oneof(fc.nat({ max: 14 }), junk), release: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('heldAsInput' as const), which, key: validKey }) },
  { weight: 2, arbitrary: fc.constant({ t: 'snapshot' as const }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('releaseSnapshot' as const), which }) },
  { weight: 1, arbitrary: fc.constant({ t: 'foreignSnapshot' as const }) },
  {
    weight: 4,
    arbitrary: fc.record({
      t: fc.constant('iterate' as const),
      options: iteratorOptions,
      snapshot: snapshotChoice,
      steps: fc.nat({ max: 30 }),
      keep: fc.boolean(),
      batches: fc.boolean(),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ t: fc.constant('stepIterator' as const), which, steps: fc.nat({ max: 10 }), release: fc.boolean(), batches: fc.boolean() }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ t: fc.constant('seekIterator' as const), which, key: fc.oneof({ weight: 5, arbitrary: validKey }, { weight: 1, arbitrary: junk }) }),
  },
  { weight: 1, arbitrary: fc.constant({ t: 'flush' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      t: fc.constant('compactRange' as const),
      begin: fc.oneof(fc.constant(undefined), anyKey),
      end: fc.oneof(fc.constant(undefined), anyKey),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ t: 'idle' as const }) },
  { weight: 1, arbitrary: fc.constant({ t: 'statistics' as const }) },
  { weight: 1, arbitrary: fc.constant({ t: 'verify' as const }) },
  { weight: 2, arbitrary: fc.constant({ t: 'turn' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      t: fc.constant('openJunk' as const),
      options: junkOpenOptions,
      name: fc.oneof(fc.constantFrom('other', 'bad name', '', '.x', 'a'.repeat(129)), junk),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ t: 'reopen' as const }) },
  { weight: 1, arbitrary: fc.constant({ t: 'close' as const }) },
  {
    weight: 3,
    arbitrary: fc.record({
      t: fc.constant('transaction' as const),
      ops: fc.array(txOp, { maxLength: 8 }),
      interfere: fc.boolean(),
      end: fc.constantFrom('commit' as const, 'abort' as const, 'leave' as const),
      after: fc.boolean(),
      sync: fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.boolean() }, { weight: 1, arbitrary: junk }),
    }),
  },
);

// ---------------------------------------------------------------------------
// The model

type Oracle = Map<string, Uint8Array>; // hex of the key -> value

interface Held {
  result: PinnedValue | MultiGetResult;
  /** What each value must be: copies taken from the oracle when it was read. */
  expected: (Uint8Array | undefined)[];
}

interface LiveIterator {
  it: EntryIterator;
  expected: [string, Uint8Array][];
  at: number;
  reverse: boolean;
  /** The last transient batch it handed out: the next call must end it. */
  batch?: EntryBatch | undefined;
  /** Its database was closed since: every step throws `Closed`. */
  dbClosed: boolean;
}

interface LiveSnapshot {
  snapshot: Snapshot;
  view: Oracle;
  released: boolean;
  dbClosed: boolean;
}

function eq(a: Uint8Array | undefined, b: Uint8Array | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function check(cond: boolean, message: () => string): void {
  if (!cond) throw new Error(message());
}

/** The keys of `view` within the bounds of `options` (already validated), in order. */
function expectedScan(view: Oracle, options: Record<string, unknown>): [string, Uint8Array][] {
  const lower = options.gte !== undefined ? hex(keyOf(options.gte)!) : options.gt !== undefined ? `${hex(keyOf(options.gt)!)}00` : undefined;
  const upper = options.lt !== undefined ? hex(keyOf(options.lt)!) : options.lte !== undefined ? `${hex(keyOf(options.lte)!)}00` : undefined;
  const keys = [...view.keys()].filter((k) => (lower === undefined || k >= lower) && (upper === undefined || k < upper)).sort();
  if (options.reverse === true) keys.reverse();
  return keys.map((k) => [k, view.get(k)!]);
}

class Model {
  readonly root = new FakeDirectory();
  readonly locks = new FakeLocks();
  db!: Database;
  oracle: Oracle = new Map();
  held: Held[] = [];
  iterators: LiveIterator[] = [];
  snapshots: LiveSnapshot[] = [];
  closed = false;

  async open(): Promise<void> {
    this.db = await openOn({ root: this.root, locks: this.locks }, 'bad-input', { writeBufferSize: 64 * 1024, poolReserve: 8, mergeOperator: 'append' });
    this.closed = false;
  }

  view(snapshot: number): { view: Oracle; options: { snapshot?: Snapshot }; released: boolean; dbClosed: boolean } {
    const s = snapshot >= 0 ? this.snapshots[snapshot % Math.max(1, this.snapshots.length)] : undefined;
    if (s === undefined) return { view: this.oracle, options: {}, released: false, dbClosed: false };
    return { view: s.view, options: { snapshot: s.snapshot }, released: s.released, dbClosed: s.dbClosed };
  }

  /**
   * Checks a call's outcome: it may work only if nothing was wrong, and
   * then `apply` runs (the oracle follows); otherwise its code must name
   * one of the things that were wrong. `snapshot` is how the snapshot it
   * read at stood.
   */
  outcome(
    what: string,
    r: { ok: boolean; error?: SiltError },
    valid: boolean,
    apply: () => void,
    snapshot: { released: boolean; dbClosed: boolean } = { released: false, dbClosed: false },
    mayFail: string[] = [],
  ): boolean {
    const wrong = !valid || this.closed || snapshot.released || snapshot.dbClosed;
    if (r.ok) {
      check(!wrong, () => `${what} worked, but ${this.closed ? 'it came after close' : !valid ? 'it had bad input' : 'its snapshot was gone'}`);
      apply();
      return true;
    }
    const allowed = new Set(mayFail);
    if (!valid) allowed.add('InvalidArgument');
    if (this.closed) allowed.add('Closed');
    if (snapshot.released) allowed.add('Released');
    // A snapshot of a database closed since belongs to no open database.
    if (snapshot.dbClosed) for (const c of ['Closed', 'Released', 'InvalidArgument']) allowed.add(c);
    // Valid writes may still fail for want of pooled files in a tight loop.
    if (!wrong) allowed.add('PoolExhausted');
    check(allowed.has(r.error!.code), () => `${what} threw ${r.error!.code} (expected one of ${[...allowed].join(', ')}): ${r.error!.message}`);
    return false;
  }

  wrote(what: string, r: { ok: boolean; error?: SiltError }, valid: boolean, apply: () => void): void {
    this.outcome(what, r, valid, apply);
  }

  applyPut(k: Uint8Array, v: Uint8Array): void {
    this.oracle.set(hex(k), v.slice());
  }

  applyDeleteRange(s: Uint8Array, e: Uint8Array): void {
    const lo = hex(s);
    const hi = hex(e);
    for (const k of [...this.oracle.keys()]) if (k >= lo && k < hi) this.oracle.delete(k);
  }

  async run(a: Action): Promise<void> {
    const db = this.db;
    switch (a.t) {
      case 'put': {
        const k = keyOf(a.key);
        const v = valueBytes(a.value);
        const valid = writable(k) && v !== undefined && validSync(a.options);
        this.wrote(
          'put',
          attempt('put', () => db.put(a.key as string, a.value as Uint8Array, a.options as never)),
          valid,
          () => this.applyPut(k!, v!),
        );
        return;
      }
      case 'delete': {
        const k = keyOf(a.key);
        const valid = writable(k) && validSync(a.options);
        this.wrote(
          'delete',
          attempt('delete', () => db.delete(a.key as string, a.options as never)),
          valid,
          () => this.oracle.delete(hex(k!)),
        );
        return;
      }
      case 'deleteRange': {
        const s = keyOf(a.start);
        const e = keyOf(a.end);
        const valid = writable(s) && writable(e) && ordered(s!, e!) && validSync(a.options);
        this.wrote(
          'deleteRange',
          attempt('deleteRange', () => db.deleteRange(a.start as string, a.end as string, a.options as never)),
          valid,
          () => this.applyDeleteRange(s!, e!),
        );
        return;
      }
      case 'batch': {
        const batch = new WriteBatch();
        const effects: (() => void)[] = [];
        let valid = validSync(a.options);
        for (const op of a.ops) {
          // Building the batch checks types at once: bad ones throw and are left out.
          if (op.op === 'put') {
            const k = keyOf(op.key);
            const v = valueBytes(op.value);
            const r = attempt('batch.put', () => batch.put(op.key as string, op.value as Uint8Array));
            check(r.ok === (k !== undefined && v !== undefined), () => `batch.put ${r.ok ? 'took' : 'refused'} ${String(op.key)}`);
            if (r.ok) {
              valid &&= writable(k);
              effects.push(() => this.applyPut(k!, v!));
            }
          } else if (op.op === 'delete') {
            const k = keyOf(op.key);
            const r = attempt('batch.delete', () => batch.delete(op.key as string));
            check(r.ok === (k !== undefined), () => `batch.delete ${r.ok ? 'took' : 'refused'} ${String(op.key)}`);
            if (r.ok) {
              valid &&= writable(k);
              effects.push(() => this.oracle.delete(hex(k!)));
            }
          } else {
            const s = keyOf(op.start)!;
            const e = keyOf(op.end)!;
            const r = attempt('batch.deleteRange', () => batch.deleteRange(op.start as string, op.end as string));
            // End before start is refused (as RocksDB's DeleteRange), and left out of the batch.
            check(r.ok === ordered(s, e), () => `batch.deleteRange of ${hex(s)}..${hex(e)}: ${r.ok ? 'accepted' : 'refused'}`);
            if (r.ok) effects.push(() => this.applyDeleteRange(s, e));
          }
        }
        for (let i = 0; i < a.huge; i++) {
          const k = utf8.encode(`huge${i % 5000}`);
          const v = utf8.encode(`v${i}`);
          batch.put(k, v);
          effects.push(() => this.applyPut(k, v));
        }
        const apply = () => {
          for (const f of effects) f();
        };
        this.wrote(
          'write',
          attempt('write', () => db.write(batch, a.options as never)),
          valid,
          apply,
        );
        if (a.reuse) {
          // The same batch again (it is not consumed by a write), then emptied.
          this.wrote(
            'write (reused)',
            attempt('write', () => db.write(batch, a.options as never)),
            valid,
            apply,
          );
          batch.clear();
          this.wrote(
            'write (cleared)',
            attempt('write', () => db.write(batch)),
            true,
            () => {},
          );
        }
        return;
      }
      case 'writeJunk': {
        const r = attempt('write', () => db.write(a.batch as WriteBatch));
        check(!r.ok && r.error.code === 'InvalidArgument', () => `write(${String(a.batch)}) did not throw InvalidArgument`);
        return;
      }
      case 'getPinned':
      case 'get': {
        const { view, options, released, dbClosed } = this.view(a.snapshot);
        const k = keyOf(a.key);
        const want = k === undefined ? undefined : view.get(hex(k));
        const r =
          a.t === 'getPinned' ? attempt('getPinned', () => db.getPinned(a.key as string, options)) : attempt('get', () => db.get(a.key as string, options));
        // Reads refuse what writes refuse (an empty or oversize key).
        this.outcome(
          a.t,
          r,
          writable(k),
          () => {
            const got = r.ok ? r.value : undefined;
            if (got instanceof PinnedValue) {
              check(eq(got.bytes, want), () => `get ${hex(k!)} gave ${hex(got.bytes)}, want ${want && hex(want)}`);
              if (a.t === 'getPinned' && a.hold) this.held.push({ result: got, expected: [want] });
              else got.release();
            } else {
              check(eq(got as Uint8Array | undefined, want), () => `${a.t} ${hex(k!)} gave the wrong value`);
            }
          },
          { released, dbClosed },
        );
        return;
      }
      case 'multiGet': {
        const { view, options, released, dbClosed } = this.view(a.snapshot);
        const given = a.keys === '3000 keys' ? Array.from({ length: 3000 }, (_, i) => `k${i % 40}`) : a.keys;
        const r = attempt('multiGet', () => db.multiGet(given as string[], { ...options, batched: a.batched as boolean }));
        const keys = Array.isArray(given) ? Array.from(given, keyOf) : undefined;
        const valid = keys?.every(writable) === true && (a.batched === undefined || typeof a.batched === 'boolean');
        this.outcome(
          'multiGet',
          r,
          valid,
          () => {
            if (!r.ok) return;
            const want = keys!.map((k) => view.get(hex(k!)));
            check(r.value.length === want.length, () => 'multiGet length');
            for (let i = 0; i < want.length; i++) check(eq(r.value.get(i), want[i]), () => `multiGet [${i}] ${hex(keys![i]!)} wrong`);
            if (a.hold) this.held.push({ result: r.value, expected: want });
            else r.value.release();
          },
          { released, dbClosed },
        );
        return;
      }
      case 'useHeld': {
        const h = this.held[a.which % Math.max(1, this.held.length)];
        if (h === undefined) return;
        const released = h.result.released;
        const r = attempt('held result', () => (h.result instanceof PinnedValue ? h.result.bytes : h.result.get(a.index as number)));
        if (released) {
          check(!r.ok && r.error.code === 'Released', () => 'a released result still handed out a view');
        } else if (h.result instanceof PinnedValue) {
          // Results stay readable after close, until released.
          check(r.ok && eq(r.value, h.expected[0]), () => 'a held value changed');
        } else {
          const i = a.index;
          const inRange = typeof i === 'number' && Number.isInteger(i) && i >= 0 && i < h.expected.length;
          if (inRange) check(r.ok && eq(r.value, h.expected[i]), () => `held multiGet [${i}] changed`);
          else check(!r.ok && r.error.code === 'InvalidArgument', () => `held multiGet [${String(i)}] did not throw InvalidArgument`);
        }
        if (a.release) {
          attempt('release', () => h.result.release());
          attempt('release twice', () => h.result.release());
        }
        return;
      }
      case 'heldAsInput': {
        // A view of wasm memory (a pinned value) given back as a value: the
        // call must copy it before anything can move or reuse that memory.
        const h = this.held[a.which % Math.max(1, this.held.length)];
        if (h === undefined || h.result.released || !(h.result instanceof PinnedValue) || h.expected[0] === undefined) return;
        const view = h.result.bytes;
        const want = h.expected[0];
        const k = keyOf(a.key)!;
        this.wrote(
          'put (a pinned view as value)',
          attempt('put', () => db.put(a.key as string, view)),
          true,
          () => this.applyPut(k, want),
        );
        if (view.length > 0 && view.length <= 65536) {
          const k2 = view.slice();
          this.wrote(
            'put (a pinned view as key)',
            attempt('put', () => db.put(view, k2)),
            true,
            () => this.applyPut(k2, k2),
          );
        }
        return;
      }
      case 'snapshot': {
        const r = attempt('snapshot', () => db.snapshot());
        this.outcome('snapshot', r, true, () => {
          if (r.ok) this.snapshots.push({ snapshot: r.value, view: new Map(this.oracle), released: false, dbClosed: false });
        });
        return;
      }
      case 'releaseSnapshot': {
        const s = this.snapshots[a.which % Math.max(1, this.snapshots.length)];
        if (s === undefined) return;
        check(attempt('snapshot.release', () => s.snapshot.release()).ok, () => 'release threw');
        check(attempt('snapshot.release (twice)', () => s.snapshot.release()).ok, () => 'a second release threw');
        s.released = true;
        return;
      }
      case 'foreignSnapshot': {
        const other = await openMemory();
        try {
          const s = other.snapshot();
          const r = attempt('get with a foreign snapshot', () => db.get('a', { snapshot: s }));
          check(!r.ok && (r.error.code === 'InvalidArgument' || (this.closed && r.error.code === 'Closed')), () => 'a snapshot of another database was taken');
          const bogus = attempt('get with a fake snapshot', () => db.get('a', { snapshot: { id: 1 } as unknown as Snapshot }));
          check(!bogus.ok, () => 'a fake snapshot was taken');
          s.release();
        } finally {
          other.close();
        }
        return;
      }
      case 'iterate': {
        const { view, options: so, released, dbClosed } = this.view(a.snapshot);
        const options: Record<string, unknown> = { ...a.options, ...so };
        const r = attempt('iterator', () => db.iterator(options));
        const validBounds =
          Object.keys(options).every((k) => ITERATOR_KEYS.includes(k)) &&
          (['gt', 'gte', 'lt', 'lte'] as const).every((b) => options[b] === undefined || keyOf(options[b]) !== undefined);
        const valid =
          validBounds &&
          !(options.gt !== undefined && options.gte !== undefined) &&
          !(options.lt !== undefined && options.lte !== undefined) &&
          (options.reverse === undefined || typeof options.reverse === 'boolean') &&
          (options.autoRefresh === undefined || typeof options.autoRefresh === 'boolean') &&
          (options.batchSize === undefined ||
            (typeof options.batchSize === 'number' && Number.isInteger(options.batchSize) && options.batchSize >= 1 && options.batchSize <= 1 << 20));
        this.outcome(
          'iterator',
          r,
          valid,
          () => {
            if (!r.ok) return;
            const live: LiveIterator = { it: r.value, expected: expectedScan(view, options), at: 0, dbClosed: false, reverse: options.reverse === true };
            this.stepIterator(live, a.keep ? a.steps : Infinity, a.batches);
            if (a.keep) this.iterators.push(live);
            else attempt('iterator.release', () => live.it.release());
          },
          { released, dbClosed },
        );
        return;
      }
      case 'stepIterator': {
        const live = this.iterators[a.which % Math.max(1, this.iterators.length)];
        if (live === undefined) return;
        this.stepIterator(live, a.steps, a.batches);
        if (a.release) {
          attempt('iterator.release', () => live.it.release());
          this.stepIterator(live, 1, a.batches);
        }
        return;
      }
      case 'seekIterator': {
        const live = this.iterators[a.which % Math.max(1, this.iterators.length)];
        if (live === undefined) return;
        const released = live.it.released;
        const r = attempt('iterator.seek', () => live.it.seek(a.key as string));
        this.endBatch(live);
        const k = keyOf(a.key);
        if (live.dbClosed) {
          check(
            !r.ok && (r.error.code === 'Closed' || (k === undefined && r.error.code === 'InvalidArgument')),
            () => 'a seek on an iterator of a closed database worked',
          );
          return;
        }
        if (released) {
          check(
            !r.ok && (r.error.code === 'Released' || (k === undefined && r.error.code === 'InvalidArgument')),
            () => 'a seek on a released iterator worked',
          );
          return;
        }
        if (k === undefined) {
          check(!r.ok && r.error.code === 'InvalidArgument', () => `a seek to ${String(a.key)} was not refused as InvalidArgument`);
          return;
        }
        // A key too long is the engine's to refuse.
        if (!r.ok && r.error.code === 'InvalidArgument') return;
        check(r.ok, () => `iterator.seek threw ${!r.ok && r.error.code}: ${!r.ok && r.error.message}`);
        // Forward: the first key >= the target; reverse (expected is
        // descending): the first key <= it. Bounds hold either way.
        const target = hex(k);
        const at = live.expected.findIndex(([key]) => (live.reverse ? key <= target : key >= target));
        live.at = at < 0 ? live.expected.length : at;
        return;
      }
      case 'flush':
        this.wrote(
          'flush',
          attempt('flush', () => db.flush()),
          true,
          () => {},
        );
        return;
      case 'compactRange': {
        const valid = (a.begin === undefined || keyOf(a.begin) !== undefined) && (a.end === undefined || keyOf(a.end) !== undefined);
        const r = await attemptAsync('compactRange', () => db.compactRange(a.begin as string, a.end as string));
        // A key too long for a bound is the engine's to refuse.
        if (!r.ok && valid && !this.closed && r.error.code === 'InvalidArgument') return;
        this.wrote('compactRange', r, valid, () => {});
        return;
      }
      case 'idle': {
        // After close there is nothing to wait for: idle() resolves.
        const r = await attemptAsync('idle', () => db.idle());
        check(r.ok, () => `idle failed: ${!r.ok && r.error.message}`);
        return;
      }
      case 'statistics':
        this.outcome(
          'statistics',
          attempt('statistics', () => db.statistics()),
          true,
          () => {},
        );
        return;
      case 'verify':
        this.outcome(
          'verify',
          attempt('verify', () => db.verify()),
          true,
          () => {},
        );
        return;
      case 'turn':
        await new Promise((r) => setTimeout(r, 0));
        return;
      case 'openJunk': {
        const r = await attemptAsync('openOn', () => openOn({ root: new FakeDirectory(), locks: new FakeLocks() }, a.name as string, a.options as OpenOptions));
        if (r.ok) r.value.close();
        const m = await attemptAsync('openMemory', () => openMemory(a.options as OpenOptions));
        if (m.ok) m.value.close();
        return;
      }
      case 'reopen':
        if (!this.closed) this.close();
        await this.open();
        return;
      case 'close':
        this.close();
        return;
      case 'transaction':
        this.transaction(a);
        return;
    }
  }

  /**
   * A transaction of bad and good calls, checked against its own view (the
   * oracle at its begin with its valid writes on top): every read equals
   * the view; its commit fails with `Conflict` exactly when someone else
   * wrote a key it tracked, and otherwise makes the oracle its view.
   */
  transaction(a: Extract<Action, { t: 'transaction' }>): void {
    const db = this.db;
    const begun = attempt('begin', () => db.begin());
    if (!this.outcome('begin', begun, true, () => {}) || !begun.ok) return;
    const tx = begun.value;
    const view: Oracle = new Map(this.oracle);
    const tracked: Uint8Array[] = [];
    for (const op of a.ops) {
      if (op.op === 'get') {
        const k = keyOf(op.key);
        const r = attempt('tx.get', () => (op.forUpdate ? tx.getForUpdate(op.key as string) : tx.get(op.key as string)));
        this.outcome(`tx.get${op.forUpdate ? 'ForUpdate' : ''}`, r, writable(k), () => {
          check(eq(r.ok ? r.value : undefined, view.get(hex(k!))), () => `tx.get ${hex(k!)} did not read the transaction's view`);
          if (op.forUpdate) tracked.push(k!);
        });
      } else if (op.op === 'deleteRange') {
        const s = keyOf(op.start);
        const e = keyOf(op.end);
        const r = attempt('tx.deleteRange', () => tx.deleteRange(op.start as string, op.end as string));
        this.outcome('tx.deleteRange', r, writable(s) && writable(e) && ordered(s!, e!), () => {
          const lo = hex(s!);
          const hi = hex(e!);
          for (const k of [...view.keys()]) if (k >= lo && k < hi) view.delete(k);
        });
      } else {
        const k = keyOf(op.key);
        const v = op.op === 'delete' ? new Uint8Array(0) : valueBytes(op.value);
        const r = attempt(`tx.${op.op}`, () => {
          if (op.op === 'delete') tx.delete(op.key as string);
          else if (op.op === 'put') tx.put(op.key as string, op.value as Uint8Array);
          else tx.merge(op.key as string, op.value as Uint8Array);
        });
        this.outcome(`tx.${op.op}`, r, writable(k) && v !== undefined, () => {
          tracked.push(k!);
          if (op.op === 'delete') view.delete(hex(k!));
          else if (op.op === 'put') view.set(hex(k!), v!);
          else {
            const old = view.get(hex(k!)) ?? new Uint8Array(0);
            const next = new Uint8Array(old.length + v!.length);
            next.set(old);
            next.set(v!, old.length);
            view.set(hex(k!), next);
          }
        });
      }
    }
    // Someone else writes a key the transaction tracked.
    const interfered = a.interfere && tracked.length > 0 && !this.closed;
    if (interfered) {
      const k = tracked[0]!;
      const r = attempt('put (interfering)', () => db.put(k, utf8.encode('someone else')));
      if (!this.outcome('put (interfering)', r, true, () => this.applyPut(k, utf8.encode('someone else')))) {
        tx.abort();
        return;
      }
    }
    if (a.end === 'abort') tx.abort();
    if (a.end === 'commit') {
      const r = attempt('tx.commit', () => tx.commit({ sync: a.sync as boolean }));
      const validSync = a.sync === undefined || typeof a.sync === 'boolean';
      const committed = this.outcome(
        'tx.commit',
        r,
        validSync && !interfered,
        () => (this.oracle = view),
        undefined,
        interfered && validSync ? ['Conflict'] : [],
      );
      if (interfered && validSync && !this.closed)
        check(!r.ok && r.error.code === 'Conflict', () => `a commit after a newer write of a tracked key gave ${r.ok ? 'success' : r.error.code}`);
      // Refused for bad options (or for want of pooled files), it is still open.
      if (!committed) tx.abort();
    }
    if (a.after && a.end !== 'leave') {
      const r = attempt('tx.put after its end', () => tx.put('a', new Uint8Array(1)));
      check(!r.ok && r.error.code === 'Released', () => `a write to an ended transaction gave ${r.ok ? 'success' : r.error.code}`);
    }
    // 'leave': left open; the database forgets it at close.
  }

  /** The transient batch `live` handed out last must read as empty now. */
  endBatch(live: LiveIterator): void {
    const b = live.batch;
    if (b === undefined) return;
    live.batch = undefined;
    check(b.bytes.length === 0 && b.offsets.length === 0, () => 'a transient batch still reads after the next call on its iterator');
    if (b.length > 0) {
      const r = attempt('batch.keyAt', () => b.keyAt(0));
      check(!r.ok && r.error.code === 'Released', () => `keyAt on an ended batch: ${r.ok ? 'it worked' : r.error.code}`);
    }
  }

  stepIterator(live: LiveIterator, steps: number, batches = false): void {
    if (batches) {
      this.stepBatches(live, steps);
      return;
    }
    for (let n = 0; n < steps; n++) {
      const released = live.it.released;
      const r = attempt('iterator.next', () => live.it.next());
      this.endBatch(live);
      if (live.dbClosed) {
        check(!r.ok && r.error.code === 'Closed', () => `an iterator of a closed database went on: ${r.ok ? 'it worked' : r.error.code}`);
        return;
      }
      if (released) {
        // Ended (done for good) or released (throws Released).
        check(
          (r.ok && r.value.done === true) || (!r.ok && r.error.code === 'Released'),
          () => `a released iterator went on: ${r.ok ? JSON.stringify(r.value.done) : r.error.code}`,
        );
        return;
      }
      check(r.ok, () => `iterator.next threw ${!r.ok && r.error.code}: ${!r.ok && r.error.message}`);
      if (!r.ok) return;
      const want = live.expected[live.at];
      if (r.value.done) {
        check(want === undefined, () => `the iterator ended at ${live.at} of ${live.expected.length}`);
        return;
      }
      check(want !== undefined, () => `the iterator went past its ${live.expected.length} entries`);
      const [k, v] = r.value.value;
      check(hex(k) === want![0] && eq(v, want![1]), () => `iterator entry ${live.at}: ${hex(k)}, want ${want![0]}`);
      live.at++;
    }
  }

  /** `steps` transient batches of `live`, each entry checked. */
  stepBatches(live: LiveIterator, steps: number): void {
    for (let n = 0; n < steps; n++) {
      const released = live.it.released;
      const r = attempt('iterator.nextBatch', () => live.it.nextBatch());
      this.endBatch(live);
      if (live.dbClosed) {
        check(!r.ok && r.error.code === 'Closed', () => `an iterator of a closed database gave a batch: ${r.ok ? 'it worked' : r.error.code}`);
        return;
      }
      if (released) {
        check(!r.ok && r.error.code === 'Released', () => `a released iterator gave a batch: ${r.ok ? 'it worked' : r.error.code}`);
        return;
      }
      check(r.ok, () => `iterator.nextBatch threw ${!r.ok && r.error.code}: ${!r.ok && r.error.message}`);
      if (!r.ok) return;
      const b = r.value;
      if (b === undefined) {
        // The end: the iterator stays live (seek may move it again).
        check(live.at === live.expected.length, () => `the batches ended at ${live.at} of ${live.expected.length}`);
        check(!live.it.released, () => 'the end of the batches released the iterator');
        return;
      }
      check(b.length > 0, () => 'an empty batch');
      for (let i = 0; i < b.length; i++) {
        const want = live.expected[live.at];
        check(want !== undefined, () => `the batches went past their ${live.expected.length} entries`);
        if (want === undefined) return;
        check(hex(b.keyAt(i)) === want[0] && eq(b.valueAt(i), want[1]), () => `batch entry ${live.at}: ${hex(b.keyAt(i))}, want ${want[0]}`);
        live.at++;
      }
      live.batch = b;
    }
  }

  close(): void {
    // Iterators still open now are the ones close() releases for good.
    const open = this.closed ? [] : this.iterators.filter((it) => !it.it.released);
    const r = attempt('close', () => this.db.close());
    check(r.ok, () => `close threw ${!r.ok && r.error.message}`);
    check(attempt('close (twice)', () => this.db.close()).ok, () => 'a second close threw');
    this.closed = true;
    for (const it of open) it.dbClosed = true;
    for (const s of this.snapshots) s.dbClosed = true;
  }

  /** The database equals the oracle (a full scan and a multiGet) and verifies. */
  async checkConsistent(): Promise<void> {
    if (this.closed) await this.open();
    const db = this.db;
    const scanned: [string, Uint8Array][] = [];
    for (const [k, v] of db.iterator()) scanned.push([hex(k), v.slice()]);
    const want = [...this.oracle.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    check(scanned.length === want.length, () => `a full scan has ${scanned.length} entries, the oracle ${want.length}`);
    for (let i = 0; i < want.length; i++) {
      check(scanned[i]![0] === want[i]![0] && eq(scanned[i]![1], want[i]![1]), () => `entry ${i}: ${scanned[i]![0]}, want ${want[i]![0]}`);
    }
    db.verify();
    await db.idle();
    db.verify();
  }

  async dispose(): Promise<void> {
    for (const h of this.held) h.result.release();
    for (const it of this.iterators) it.it.release();
    for (const s of this.snapshots) s.snapshot.release();
    if (!this.closed) this.db.close();
  }
}

/** Whether a range from `s` to `e` is in order (deleteRange refuses end before start; equal is an empty range). */
function ordered(s: Uint8Array, e: Uint8Array): boolean {
  return hex(s) <= hex(e);
}

/** Whether a write's `options` are valid: none, or an object with no key but `sync`, a boolean if there. */
function validSync(options: unknown): boolean {
  if (options === undefined) return true;
  if (options === null || typeof options !== 'object') return false;
  for (const key in options) if (key !== 'sync') return false;
  const sync = (options as { sync?: unknown }).sync;
  return sync === undefined || typeof sync === 'boolean';
}

test(
  'every call over the public API works or throws a typed SiltError, and the database stays equal to the oracle',
  async () => {
    const started = Date.now();
    await fc.assert(
      fc.asyncProperty(fc.array(action, { minLength: 1, maxLength: 80, size: 'max' }), async (actions) => {
        sequences++;
        const m = new Model();
        await m.open();
        try {
          for (const a of actions) await m.run(a);
          // After close, every call throws Closed; results stay readable.
          if (m.closed) {
            for (const a of actions.slice(0, 10)) await m.run(a);
          }
          await m.checkConsistent();
        } finally {
          await m.dispose();
        }
      }),
      {
        // Replays a failure: SILT_BAD_INPUT_SEED and SILT_BAD_INPUT_PATH from its report.
        ...(process.env.SILT_BAD_INPUT_SEED ? { seed: Number(process.env.SILT_BAD_INPUT_SEED) } : {}),
        ...(process.env.SILT_BAD_INPUT_PATH ? { path: process.env.SILT_BAD_INPUT_PATH } : {}),
        numRuns: SOAK ? 1_000_000 : 100_000,
        interruptAfterTimeLimit: BUDGET_MS,
        markInterruptAsFailure: false,
        endOnFailure: false,
      },
    );
    const elapsed = Date.now() - started;
    if (process.env.SILT_BAD_INPUT_SEED) return; // a replay is no run to report
    expect(sequences).toBeGreaterThan(20);
    mkdirSync(new URL('../../target/reliability/', import.meta.url), { recursive: true });
    const report = { calls, sequences, failures: 0, seconds: Math.round(elapsed / 1000), soak: SOAK };
    writeFileSync(new URL('../../target/reliability/bad-input.json', import.meta.url), `${JSON.stringify(report)}\n`);
    console.log(`bad-input: ${JSON.stringify(report)}`);
  },
  BUDGET_MS * 3 + 60_000,
);
