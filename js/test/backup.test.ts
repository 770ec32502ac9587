// Backups in the worker API: export → import round trips (random data,
// sublevels, writes made while an export is read, range-limited exports),
// and damaged or truncated exports refused with nothing left visible.
// On real OPFS and through connect(): tests/e2e/backup.spec.ts.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { openMemory, type Database } from '../src/index.js';
import { bytes, fresh, rejected, text } from './helpers.js';

async function bytesOf(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');

function everything(db: Database): [string, string][] {
  return [...db.iterator()].map(([k, v]) => [hex(k), hex(v)]);
}

describe('export and import', () => {
  test('round-trip random databases exactly, in pieces of any size', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.uint8Array({ maxLength: 12 }), fc.uint8Array({ maxLength: 300 })), { maxLength: 300 }),
        fc.array(fc.tuple(fc.uint8Array({ maxLength: 12 }), fc.uint8Array({ maxLength: 12 })), { maxLength: 5 }),
        fc.boolean(),
        fc.integer({ min: 1, max: 5000 }),
        fc.constantFrom('tables' as const, 'entries' as const),
        async (puts, ranges, flush, piece, form) => {
          const src = await openMemory({ writeBufferSize: 64 * 1024 });
          const dst = await openMemory();
          try {
            for (const [k, v] of puts) src.put(k, v);
            for (const [a, b] of ranges) src.deleteRange(a, b);
            if (flush) src.flush();
            const want = everything(src);
            const all = await bytesOf(src.export({ form }));
            expect(all[8], 'format version').toBe(form === 'tables' ? 2 : 1);
            // The same bytes, in pieces of `piece` bytes.
            const pieces = Array.from({ length: Math.ceil(all.length / piece) }, (_, i) => all.subarray(i * piece, (i + 1) * piece));
            const report = await dst.import(pieces);
            // Tables: every entry they hold, overwritten and deleted ones too.
            if (form === 'entries') expect(report.entries).toBe(want.length);
            else expect(report.entries).toBeGreaterThanOrEqual(want.length);
            expect(report.streamBytes).toBe(all.length);
            expect(everything(dst)).toEqual(want);
            expect(dst.count()).toBe(want.length);
          } finally {
            src.close();
            dst.close();
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  test('an export reads as of its start; a range or a sublevel exports only its keys', async () => {
    const src = await fresh();
    for (let i = 0; i < 3000; i++) src.put(`k${String(i).padStart(5, '0')}`, bytes(`v${i}`));
    const users = src.sublevel<string, { age: number }>('users', { keyEncoding: 'utf8', valueEncoding: 'json' });
    users.put('ann', { age: 7 });
    const stream = src.export();
    const reader = stream.getReader();
    const first = await reader.read();
    // Written after the export began: not in it.
    src.put('k00000', bytes('changed'));
    src.put('zzz', bytes('new'));
    const parts = [first.value!];
    for (let r = await reader.read(); !r.done; r = await reader.read()) parts.push(r.value);
    const dst = await fresh();
    await dst.import(parts);
    expect(text(dst.get('k00000'))).toBe('v0');
    expect(dst.get('zzz')).toBeUndefined();
    expect(dst.count()).toBe(3001);
    expect(dst.sublevel('users', { keyEncoding: 'utf8', valueEncoding: 'json' }).get('ann')).toEqual({ age: 7 });

    const part = await fresh();
    await part.import(await bytesOf(src.export({ gte: 'k00100', lt: 'k00200' })));
    expect(part.count()).toBe(100);
    const sub = await fresh();
    await sub.import(await bytesOf(users.export()));
    expect([...sub.keys()].map((k) => text(k))).toEqual(['!users!ann']);
  });

  test('damaged, truncated or foreign bytes are refused, and the database stays empty and usable', async () => {
    const src = await fresh();
    for (let i = 0; i < 2000; i++) src.put(`k${i}`, new Uint8Array(100).fill(i));
    for (const form of ['tables', 'entries'] as const) await refusesDamaged(await bytesOf(src.export({ form })));
  });

  test('the tables form is of a whole database, and an import needs the merge operator its tables were written with', async () => {
    const src = await openMemory({ mergeOperator: 'u64add' });
    try {
      src.put('a', bytes('1'));
      src.merge('n', new Uint8Array(8).fill(1, 0, 1));
      expect(() => src.export({ gte: 'a', form: 'tables' })).toThrow(/tables form is of a whole database/);
      expect(() => src.export({ form: 'files' as never })).toThrow(/'tables' or 'entries'/);
      // A sublevel or a range: entries by default.
      expect((await bytesOf(src.sublevel('s').export()))[8]).toBe(1);
      const tables = await bytesOf(src.export());
      const plain = await openMemory();
      const e = await rejected(plain.import(tables));
      expect(e.code).toBe('InvalidArgument');
      expect(e.message).toMatch(/merge operator "u64add"/);
      expect(plain.count()).toBe(0);
      // The entries form applies the merges: any database takes it.
      await plain.import(await bytesOf(src.export({ form: 'entries' })));
      expect(Array.from(plain.get('n')!)).toEqual([1, 0, 0, 0, 0, 0, 0, 0]);
      const same = await openMemory({ mergeOperator: 'u64add' });
      await same.import(tables);
      expect(Array.from(same.get('n')!)).toEqual([1, 0, 0, 0, 0, 0, 0, 0]);
      plain.close();
      same.close();
    } finally {
      src.close();
    }
  });

  async function refusesDamaged(good: Uint8Array): Promise<void> {
    const cases: [string, Uint8Array, string[]][] = [
      ['a flipped byte in the data', flip(good, Math.floor(good.length / 2)), ['ChecksumMismatch']],
      ['a flipped byte in a chunk header', flip(good, 18), ['Corruption', 'ChecksumMismatch']],
      ['truncated', good.subarray(0, good.length - 5), ['Corruption']],
      ['only the header', good.subarray(0, 16), ['Corruption']],
      ['not an export', bytes('{"this": "is JSON"}'), ['Corruption']],
      ['empty', new Uint8Array(0), ['Corruption']],
    ];
    for (const [what, input, codes] of cases) {
      const dst = await fresh();
      const e = await rejected(dst.import(input));
      expect(codes, what).toContain(e.code);
      expect(dst.count(), what).toBe(0);
      expect(dst.statistics().properties.tableBytes, what).toBe(0);
      // Still usable, and still importable.
      await dst.import(good);
      expect(dst.count(), what).toBe(2000);
    }
  }

  test('an import needs an empty database, the database itself, and chunks of bytes', async () => {
    const db = await fresh();
    db.put('k', bytes('v'));
    const good = await bytesOf((await fresh()).export());
    expect((await rejected(db.import(good))).code).toBe('InvalidArgument');
    const empty = await fresh();
    expect((await rejected(empty.sublevel('s').import(good))).message).toMatch(/not a sublevel/);
    expect((await rejected(empty.import(['not bytes'] as unknown as Uint8Array[]))).message).toMatch(/Uint8Array chunks/);
    expect((await rejected(empty.import(42 as never))).code).toBe('InvalidArgument');
    // A stream that fails: its own error, and nothing is left.
    const failing = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(good.subarray(0, 10));
        c.error(new TypeError('network down'));
      },
    });
    await expect(empty.import(failing)).rejects.toThrow('network down');
    expect(empty.count()).toBe(0);
    await empty.import(good);
  });
});

function flip(b: Uint8Array, at: number): Uint8Array {
  const c = b.slice();
  c[at]! ^= 0x40;
  return c;
}
