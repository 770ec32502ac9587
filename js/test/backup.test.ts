// Backups in the worker API: export → import round trips of random
// databases, in either form and in pieces of any size. What both APIs
// share (an export as of its start, ranges and sublevels, damaged exports
// refused) is in scenarios/backups.js; on real OPFS and through connect():
// tests/e2e/backup.spec.ts.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { openMemory, type Database } from '../src/index.js';
import { compareBytes } from '../src/core/bytes.js';

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
            // (In order: end before start is refused.)
            for (const [a, b] of ranges) compareBytes(a, b) <= 0 ? src.deleteRange(a, b) : src.deleteRange(b, a);
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
});

describe("the RocksDB form: export({ form: 'rocksdb' }) and ingestRocksdb()", () => {
  test('round-trips random databases through a tar archive of RocksDB tables, in pieces of any size', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.uint8Array({ maxLength: 12 }), fc.uint8Array({ maxLength: 300 })), { maxLength: 300 }),
        fc.array(fc.tuple(fc.uint8Array({ maxLength: 12 }), fc.uint8Array({ maxLength: 12 })), { maxLength: 5 }),
        fc.integer({ min: 1, max: 5000 }),
        fc.constantFrom('none' as const, 'lz4' as const),
        fc.constantFrom(undefined, 1024, 1 << 20),
        async (puts, ranges, piece, compression, targetFileSize) => {
          const src = await openMemory({ writeBufferSize: 64 * 1024 });
          const dst = await openMemory();
          try {
            for (const [k, v] of puts) src.put(k, v);
            for (const [a, b] of ranges) compareBytes(a, b) <= 0 ? src.deleteRange(a, b) : src.deleteRange(b, a);
            const want = everything(src);
            const all = await bytesOf(src.export({ form: 'rocksdb', compression, ...(targetFileSize ? { targetFileSize } : {}) }));
            // A ustar archive (its end: two zero blocks), a table per file.
            expect(all.length % 512).toBe(0);
            if (want.length > 0) expect(new TextDecoder().decode(all.subarray(257, 262))).toBe('ustar');
            const pieces = Array.from({ length: Math.ceil(all.length / piece) }, (_, i) => all.subarray(i * piece, (i + 1) * piece));
            const report = await dst.ingestRocksdb(pieces);
            expect(report.keys).toBe(want.length);
            if (want.length === 0) expect(report.tables).toBe(0);
            expect(everything(dst)).toEqual(want);
          } finally {
            src.close();
            dst.close();
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  test('a damaged or cut archive is refused and writes nothing; options are checked', async () => {
    const src = await openMemory({ valueEncoding: 'utf8' });
    const dst = await openMemory({ valueEncoding: 'utf8' });
    try {
      for (let i = 0; i < 2000; i++) src.put(`key${String(i).padStart(5, '0')}`, `value ${i}`);
      dst.put('mine', 'kept');
      const all = await bytesOf(src.export({ form: 'rocksdb' }));
      // Bytes of the table (past its tar header): each is under a block's
      // checksum or makes the table malformed. (The archive's padding and
      // a footer's padding are under none, in RocksDB's format too.)
      const tableSize = Number.parseInt(new TextDecoder().decode(all.subarray(124, 135)), 8);
      for (const at of [600, 512 + Math.floor(tableSize / 2), 512 + tableSize - 60]) {
        const bad = all.slice();
        bad[at]! ^= 0x10;
        const err = await dst.ingestRocksdb(bad).then(
          () => undefined,
          (e: { code?: string }) => e,
        );
        expect(err?.code, `a flipped bit at ${at}`).toMatch(/^(Corruption|ChecksumMismatch)$/);
      }
      const cut = await dst.ingestRocksdb(all.subarray(0, all.length - 1024 - 512)).catch((e: { code?: string }) => e);
      expect((cut as { code?: string }).code).toBe('Corruption');
      expect([...dst.iterator()].map(([k, v]) => [new TextDecoder().decode(k), v])).toEqual([['mine', 'kept']]);
      // A Silt backup is not a RocksDB table, and the other way round.
      await expect(dst.ingestRocksdb(await bytesOf(src.export()))).rejects.toMatchObject({ code: 'Corruption' });
      await expect((await openMemory()).import(all)).rejects.toMatchObject({ code: 'Corruption' });
      expect(() => src.export({ form: 'entries', compression: 'lz4' })).toThrow(/for form: 'rocksdb'/);
      expect(() => src.export({ form: 'rocksdb', compression: 'zstd' as 'lz4' })).toThrow(/'none' or 'lz4'/);
      expect(() => src.export({ form: 'rocksdb', targetFileSize: 0 })).toThrow(/from 1 to 2 \*\* 30/);
      expect(() => src.export({ form: 'rocksdb', targetFileSize: 2 ** 31 })).toThrow(/from 1 to 2 \*\* 30/);
      // However small the target, each table holds an entry (and the export ends).
      const tiny = await bytesOf(src.export({ form: 'rocksdb', targetFileSize: 1, lt: 'key00005' }));
      const tinyCopy = await openMemory({ valueEncoding: 'utf8' });
      expect(await tinyCopy.ingestRocksdb(tiny)).toEqual({ keys: 5, tables: 5 });
      tinyCopy.close();
      await expect(dst.sublevel('s').ingestRocksdb(all)).rejects.toMatchObject({ code: 'InvalidArgument' });
    } finally {
      src.close();
      dst.close();
    }
  });
});
