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
