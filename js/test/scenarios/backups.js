// Backups: export() streams a consistent snapshot, import() fills an empty
// database from one, and damaged, truncated or foreign bytes are refused
// with nothing left. Of whole databases (a sublevel exports its entries,
// and cannot import). The round trips of random databases, and
// importDatabase on OPFS, are the worker's: js/test/backup.test.ts,
// tests/e2e/backup.spec.ts.
import { eq, fails, ok } from './check.js';
import { bytes, collect, key, scenario, text, textKeys } from './scenario.js';

/**
 * Every byte of `stream`, read with a reader: a stream that fails rejects
 * with its own error (`new Response(stream).arrayBuffer()` rejects with a
 * TypeError instead in Chromium).
 * @param {ReadableStream<Uint8Array>} stream
 */
async function bytesOf(stream) {
  const parts = [];
  const reader = stream.getReader();
  for (let r = await reader.read(); !r.done; r = await reader.read()) parts.push(r.value);
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** @param {Uint8Array} b @param {number} at */
function flip(b, at) {
  const c = b.slice();
  c[at] ^= 0x40;
  return c;
}

export default [
  scenario(
    'an export reads as of its start; a range or a sublevel exports only its keys',
    async (t) => {
      const src = await t.open();
      const batch = src.batch();
      for (let i = 0; i < 3000; i++) batch.put(key(i, 5), bytes(`v${i}`));
      await src.write(batch);
      const users = src.sublevel('users', { keyEncoding: 'utf8', valueEncoding: 'json' });
      await users.put('ann', { age: 7 });
      const reader = src.export().getReader();
      const first = await reader.read();
      // Written after the export began: not in it.
      await src.put(key(0, 5), bytes('changed'));
      await src.put('zzz', bytes('new'));
      const parts = [first.value];
      for (let r = await reader.read(); !r.done; r = await reader.read()) parts.push(r.value);
      const dst = await t.open();
      const report = await dst.import(parts);
      ok(report.entries >= 3001, `entries imported, got ${report.entries}`);
      eq([text(await dst.get(key(0, 5))), await dst.get('zzz'), await dst.count()], ['v0', undefined, 3001], 'the copy');
      eq(await dst.sublevel('users', { keyEncoding: 'utf8', valueEncoding: 'json' }).get('ann'), { age: 7 }, "a sublevel's value in the copy");
      const part = await t.open();
      await part.import(await bytesOf(src.export({ gte: key(100, 5), lt: key(200, 5) })));
      eq(await part.count(), 100, 'a copy of a range');
      const sub = await t.open();
      await sub.import(new Blob([await bytesOf(users.export())]));
      eq(await textKeys(sub.keys()), ['!users!ann'], 'a copy of a sublevel, from a Blob');
    },
    { rootOnly: true },
  ),

  scenario(
    'damaged, truncated or foreign bytes are refused, and the database stays empty and usable',
    async (t) => {
      const src = await t.open();
      const batch = src.batch();
      for (let i = 0; i < 2000; i++) batch.put(`k${i}`, new Uint8Array(100).fill(i));
      await src.write(batch);
      for (const form of ['tables', 'entries']) {
        const good = await bytesOf(src.export({ form }));
        eq(good[8], form === 'tables' ? 2 : 1, `the format version of the ${form} form`);
        const cases = [
          ['a flipped byte in the data', flip(good, Math.floor(good.length / 2)), ['ChecksumMismatch']],
          ['a flipped byte in a chunk header', flip(good, 18), ['Corruption', 'ChecksumMismatch']],
          ['truncated', good.subarray(0, good.length - 5), ['Corruption']],
          ['only the header', good.subarray(0, 16), ['Corruption']],
          ['not an export', bytes('{"this": "is JSON"}'), ['Corruption']],
          ['empty', new Uint8Array(0), ['Corruption']],
        ];
        for (const [what, input, codes] of cases) {
          const dst = await t.open();
          let code = 'none';
          try {
            await dst.import(input);
          } catch (e) {
            code = e.code ?? String(e);
          }
          ok(codes.includes(code), `${form}, ${what}: one of ${codes}, got ${code}`);
          eq([await dst.count(), (await dst.statistics()).properties.tableBytes], [0, 0], `${form}, ${what}: count and table bytes`);
          // Still usable, and still importable.
          await dst.import(good);
          eq(await dst.count(), 2000, `${form}, ${what}: count after a good import`);
        }
      }
    },
    { rootOnly: true },
  ),

  scenario(
    'RocksDB tables: an export in the rocksdb form goes into another database with ingestRocksdb, over what it holds; a damaged one writes nothing',
    async (t) => {
      const src = await t.open({ mergeOperator: 'u64add' });
      const batch = src.batch();
      for (let i = 0; i < 2000; i++) batch.put(key(i, 5), bytes(`v${i}`));
      await src.write(batch);
      await src.delete(key(3, 5));
      await src.deleteRange(key(10, 5), key(20, 5));
      await src.merge('n', t.lib.u64(2));
      await src.merge('n', t.lib.u64(3));
      const tables = await bytesOf(src.export({ form: 'rocksdb', compression: 'lz4', targetFileSize: 4096 }));
      const dst = await t.open();
      await dst.put(key(0, 5), bytes('mine'));
      await dst.put('zzz', bytes('kept'));
      // Verified whole first: a flipped bit in a table writes nothing.
      await fails(() => dst.ingestRocksdb(flip(tables, 700)), 'ChecksumMismatch');
      eq([text(await dst.get(key(0, 5))), await dst.count()], ['mine', 2], 'after the refusal');
      const report = await dst.ingestRocksdb([tables.subarray(0, 1000), tables.subarray(1000)]);
      eq(report.keys, 1990, 'keys written (merges applied at the export)');
      ok(report.tables > 1, `several tables at a 4 KiB target, got ${report.tables}`);
      eq(
        [
          text(await dst.get(key(0, 5))),
          await dst.get(key(3, 5)),
          await dst.get(key(15, 5)),
          text(await dst.get('zzz')),
          await dst.get('n'),
          await dst.count(),
        ],
        ['v0', undefined, undefined, 'kept', t.lib.u64(5), 1991],
        'the copy',
      );
      await fails(() => dst.ingestRocksdb(bytes('not a table')), 'Corruption');
      await fails(() => dst.sublevel('s').ingestRocksdb(tables), 'InvalidArgument', /not a sublevel/);
    },
    { rootOnly: true },
  ),

  scenario(
    'the tables form is of a whole database, and an import needs the merge operator its tables were written with',
    async (t) => {
      const src = await t.open({ mergeOperator: 'u64add' });
      await src.put('a', bytes('1'));
      await src.merge('n', t.lib.u64(1));
      await fails(() => bytesOf(src.export({ gte: 'a', form: 'tables' })), 'InvalidArgument', /tables form is of a whole database/);
      await fails(() => bytesOf(src.export({ form: 'files' })), 'InvalidArgument', /'tables', 'entries' or 'rocksdb'/);
      // A sublevel or a range: entries by default.
      eq((await bytesOf(src.sublevel('s').export()))[8], 1, "a sublevel's export's format version");
      const tables = await bytesOf(src.export());
      const plain = await t.open();
      await fails(() => plain.import(tables), 'InvalidArgument', /merge operator "u64add"/);
      eq(await plain.count(), 0, 'count after the refusal');
      // The entries form applies the merges: any database takes it.
      await plain.import(await bytesOf(src.export({ form: 'entries' })));
      eq(await plain.get('n'), t.lib.u64(1), 'the merged value, from the entries form');
      const same = await t.open({ mergeOperator: 'u64add' });
      await same.import(tables);
      eq(await same.get('n'), t.lib.u64(1), 'the merged value, from the tables form');
    },
    { rootOnly: true },
  ),

  scenario(
    'export() refuses bad options when called, before anything is read',
    async (t) => {
      const db = await t.open();
      await db.put('a', bytes('1'));
      for (const options of [{ gte: 'a', form: 'tables' }, { form: 'files' }, { gt: 'a', gte: 'b' }]) {
        let code = 'none';
        try {
          db.export(options); // not awaited, not read
        } catch (e) {
          code = e.code ?? String(e);
        }
        eq(code, 'InvalidArgument', JSON.stringify(options));
      }
    },
    {
      rootOnly: true,
    },
  ),

  scenario(
    'an import needs an empty database, the database itself, and chunks of bytes; a source that fails leaves nothing',
    async (t) => {
      const db = await t.open();
      await db.put('k', bytes('v'));
      const good = await bytesOf((await t.open()).export());
      await fails(() => db.import(good), 'InvalidArgument');
      const empty = await t.open();
      await fails(() => empty.sublevel('s').import(good), 'InvalidArgument', /not a sublevel/);
      await fails(() => empty.import(['not bytes']), 'InvalidArgument', /Uint8Array chunks/);
      await fails(() => empty.import(42), 'InvalidArgument');
      const failing = new ReadableStream({
        start(c) {
          c.enqueue(good.subarray(0, 10));
          c.error(new TypeError('network down'));
        },
      });
      const e = await empty.import(failing).then(
        () => undefined,
        (error) => error,
      );
      ok(String(e?.message).includes('network down'), `the stream's own error, got ${e}`);
      eq(await empty.count(), 0, 'count after the failed import');
      await empty.import(good);
      eq(await collect(empty.keys()), [], 'an empty database imported');
    },
    { rootOnly: true },
  ),
];
