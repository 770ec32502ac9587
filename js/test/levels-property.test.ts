// Encodings and sublevels against a model: random writes, batches across
// sublevels, clears and reads on a few sublevels with different encodings,
// checked against a Map of stored bytes built here, with the prefix layout
// of docs/format.md written out again (not through the package's Codec).
import fc from 'fast-check';
import { expect, test } from 'vitest';
import { openMemory, type Database } from '../src/index.js';

const utf8 = new TextEncoder();
const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
const unhex = (h: string) => Uint8Array.from(h.match(/../g) ?? [], (x) => Number.parseInt(x, 16));

/** The levels under test: a path, and how keys and values are stored. */
const LEVELS = [
  { path: [], key: 'utf8', value: 'json' },
  { path: ['a'], key: 'utf8', value: 'json' },
  { path: ['a', 'b'], key: 'utf8', value: 'utf8' },
  { path: ['ab'], key: 'json', value: 'json' },
  { path: ['x y'], key: 'utf8', value: 'utf8' },
] as const;
type Level = (typeof LEVELS)[number];

const prefixOf = (path: readonly string[]) => utf8.encode(path.map((n) => `!${n}!`).join(''));
const concat = (a: Uint8Array, b: Uint8Array) => {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
};
const storedKey = (l: Level, k: string) => concat(prefixOf(l.path), utf8.encode(l.key === 'json' ? JSON.stringify(k) : k));
const storedValue = (l: Level, v: string) => utf8.encode(l.value === 'json' ? JSON.stringify({ v }) : v);
const readValue = (l: Level, v: string) => (l.value === 'json' ? { v } : v);
const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0); // hex compares as bytes

/** [lower, upper) of `range` in `l`, as hex of stored bytes ('' / undefined: unbounded). */
function boundsOf(l: Level, r: Range): [string, string | undefined] {
  const p = prefixOf(l.path);
  let lower = hex(p);
  let upper: string | undefined;
  if (p.length > 0) {
    const end = p.slice();
    end[end.length - 1]! += 1;
    upper = hex(end);
  }
  if (r.gte !== undefined) lower = hex(storedKey(l, r.gte));
  if (r.gt !== undefined) lower = `${hex(storedKey(l, r.gt))}00`;
  if (r.lt !== undefined) upper = hex(storedKey(l, r.lt));
  if (r.lte !== undefined) upper = `${hex(storedKey(l, r.lte))}00`;
  return [lower, upper];
}

interface Range {
  gt?: string;
  gte?: string;
  lt?: string;
  lte?: string;
}

const key = fc.constantFrom('', 'a', 'b', 'a!', '!', 'ab', 'b c', 'z', '\u00e9', 'k1', 'k10', 'k2');
const value = fc.string({ maxLength: 6 });
const level = fc.nat({ max: LEVELS.length - 1 });
const range: fc.Arbitrary<Range> = fc
  .record({ lo: fc.option(key, { nil: undefined }), hi: fc.option(key, { nil: undefined }), loOpen: fc.boolean(), hiOpen: fc.boolean() })
  .map(({ lo, hi, loOpen, hiOpen }) => ({
    ...(lo === undefined ? {} : loOpen ? { gt: lo } : { gte: lo }),
    ...(hi === undefined ? {} : hiOpen ? { lt: hi } : { lte: hi }),
  }));

const op = fc.oneof(
  { weight: 5, arbitrary: fc.record({ t: fc.constant('put' as const), level, key, value }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('del' as const), level, key }) },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('batch' as const),
      ops: fc.array(fc.record({ level, key, value: fc.option(value, { nil: undefined }) }), { minLength: 1, maxLength: 5 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('clear' as const), level, range }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('get' as const), level, key }) },
  {
    weight: 3,
    arbitrary: fc.record({
      t: fc.constant('scan' as const),
      level,
      range,
      reverse: fc.boolean(),
      limit: fc.option(fc.nat({ max: 6 }), { nil: undefined }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('flush' as const) }) },
);

test('sublevels and encodings read and write what a model of their stored bytes says', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(op, { maxLength: 60 }), async (ops) => {
      runs++;
      const db = await openMemory<string, unknown>({ keyEncoding: 'utf8', valueEncoding: 'json', writeBufferSize: 64 * 1024 });
      try {
        // Each level with its own encodings (a nested sublevel would inherit its parent's).
        const levels = LEVELS.map((l) => (l.path.length === 0 ? (db as Database<unknown, unknown>) : reopenWith(db, l)));
        const model = new Map<string, string>(); // hex stored key -> hex stored value
        for (const o of ops) {
          switch (o.t) {
            case 'put': {
              const l = LEVELS[o.level]!;
              levels[o.level]!.put(o.key, readValue(l, o.value));
              model.set(hex(storedKey(l, o.key)), hex(storedValue(l, o.value)));
              break;
            }
            case 'del': {
              const l = LEVELS[o.level]!;
              levels[o.level]!.delete(o.key);
              model.delete(hex(storedKey(l, o.key)));
              break;
            }
            case 'batch': {
              const b = db.batch();
              for (const u of o.ops) {
                const l = LEVELS[u.level]!;
                const into = b.in(levels[u.level]!);
                if (u.value === undefined) into.delete(u.key);
                else into.put(u.key, readValue(l, u.value));
              }
              db.write(b);
              for (const u of o.ops) {
                const l = LEVELS[u.level]!;
                if (u.value === undefined) model.delete(hex(storedKey(l, u.key)));
                else model.set(hex(storedKey(l, u.key)), hex(storedValue(l, u.value)));
              }
              break;
            }
            case 'clear': {
              const l = LEVELS[o.level]!;
              levels[o.level]!.clear(o.range);
              const [lo, hi] = boundsOf(l, o.range);
              for (const k of [...model.keys()]) if (cmp(k, lo) >= 0 && (hi === undefined || cmp(k, hi) < 0)) model.delete(k);
              break;
            }
            case 'get': {
              const l = LEVELS[o.level]!;
              const want = model.get(hex(storedKey(l, o.key)));
              const got = levels[o.level]!.get(o.key);
              expect(got).toEqual(want === undefined ? undefined : decodeStored(l, unhex(want)));
              break;
            }
            case 'scan': {
              const l = LEVELS[o.level]!;
              const [lo, hi] = boundsOf(l, o.range);
              let want = [...model.entries()].filter(([k]) => cmp(k, lo) >= 0 && (hi === undefined || cmp(k, hi) < 0)).sort(([a], [b]) => cmp(a, b));
              if (o.reverse) want.reverse();
              expect(levels[o.level]!.count(o.range)).toBe(want.length);
              if (o.limit !== undefined) want = want.slice(0, o.limit);
              // Stored bytes, through the root.
              const raw = [
                ...(db as unknown as Database).iterator({
                  keyEncoding: 'view',
                  valueEncoding: 'view',
                  gte: unhex(lo),
                  ...(hi === undefined ? {} : { lt: unhex(hi) }),
                  reverse: o.reverse,
                  ...(o.limit === undefined ? {} : { limit: o.limit }),
                }),
              ] as unknown as [Uint8Array, Uint8Array][];
              expect(raw.map(([k, v]) => [hex(k), hex(v)])).toEqual(want);
              // Decoded, where no nested sublevel of other encodings shares the range.
              const nested = LEVELS.some((m) => m.path.length > l.path.length && l.path.every((n, i) => m.path[i] === n));
              if (!nested) {
                const got = [...levels[o.level]!.iterator({ ...o.range, reverse: o.reverse, ...(o.limit === undefined ? {} : { limit: o.limit }) })];
                const p = prefixOf(l.path).length;
                const decodedKey = (h: string) => {
                  const t = new TextDecoder().decode(unhex(h).subarray(p));
                  return l.key === 'json' ? JSON.parse(t) : t;
                };
                expect(got).toEqual(want.map(([k, v]) => [decodedKey(k), decodeStored(l, unhex(v))]));
                expect([...levels[o.level]!.keys({ ...o.range, reverse: o.reverse })].length).toBe(levels[o.level]!.count(o.range));
              }
              break;
            }
            case 'flush':
              db.flush();
              break;
          }
        }
      } finally {
        db.close();
      }
    }),
    { numRuns: 150 },
  );
  expect(runs).toBeGreaterThanOrEqual(150);
});

let runs = 0;

/** The sublevel of `l`, with `l`'s encodings. */
function reopenWith(db: Database<string, unknown>, l: Level): Database<unknown, unknown> {
  let d = db as Database<unknown, unknown>;
  for (const n of l.path) d = d.sublevel(n, { keyEncoding: l.key, valueEncoding: l.value });
  return d;
}

function decodeStored(l: Level, b: Uint8Array): unknown {
  const s = new TextDecoder().decode(b);
  return l.value === 'json' ? JSON.parse(s) : s;
}
