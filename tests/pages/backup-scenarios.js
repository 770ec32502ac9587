// Backups on real OPFS, in a worker: the fixture export that the native
// engine reads (crates/engine/tests/backup.rs), importDatabase round trips,
// and damaged exports leaving no database behind.
import { importDatabase, open, SiltError } from '/siltdb/dist/index.js';

const enc = new TextEncoder();

const bytesOf = async (stream) => new Uint8Array(await new Response(stream).arrayBuffer());

/**
 * The fixture's database: written in one batch, so its sequence numbers (in
 * the export's end record) are the same every run. Keys `fixture-0000` to
 * `fixture-0499` with values `value-<i>-` and `i % 37` dots, a JSON sublevel,
 * and the empty key.
 */
export async function fixtureExport({ name, form }) {
  const db = await open(name);
  try {
    const b = db.batch();
    for (let i = 0; i < 500; i++) b.put(`fixture-${String(i).padStart(4, '0')}`, enc.encode(`value-${i}-${'.'.repeat(i % 37)}`));
    b.put('', enc.encode('the empty key'));
    b.in(db.sublevel('notes', { keyEncoding: 'utf8', valueEncoding: 'json' })).put('n1', { title: 'from Chromium' });
    db.write(b);
    return Array.from(await bytesOf(db.export({ form })));
  } finally {
    db.close();
  }
}

/** Export `n` keys from one database, importDatabase them as another; what the copy holds. */
export async function importRoundTrip({ from, to, n }) {
  const src = await open(from);
  let bytes;
  try {
    const b = db_batch(src, n);
    src.write(b);
    src.flush();
    bytes = await bytesOf(src.export());
  } finally {
    src.close();
  }
  const t0 = performance.now();
  const report = await importDatabase(to, new Blob([bytes]));
  const ms = performance.now() - t0;
  const dst = await open(to, { createIfMissing: false });
  try {
    const last = `k${String(n - 1).padStart(7, '0')}`;
    return { report, count: dst.count(), last: new TextDecoder().decode(dst.get(last)), verified: dst.verify().entries, ms };
  } finally {
    dst.close();
  }
}

function db_batch(db, n) {
  const b = db.batch();
  for (let i = 0; i < n; i++) b.put(`k${String(i).padStart(7, '0')}`, enc.encode(`v${i}`));
  return b;
}

/** The export of database `name` after `n` entries are written into it. */
async function exportOfNew(name, n) {
  const src = await open(name);
  try {
    src.write(db_batch(src, n));
    return await bytesOf(src.export());
  } finally {
    src.close();
  }
}

/** A damaged or truncated export given to importDatabase: its error, and whether `name` exists afterwards. */
export async function importDamaged({ from, to, damage }) {
  let bytes = await exportOfNew(from, 5000);
  if (damage === 'flip') bytes[Math.floor(bytes.length / 2)] ^= 0x10;
  if (damage === 'truncate') bytes = bytes.subarray(0, bytes.length - 100);
  let code = 'none';
  try {
    await importDatabase(to, bytes);
  } catch (e) {
    code = e instanceof SiltError ? e.code : `not a SiltError: ${e}`;
  }
  let after;
  try {
    (await open(to, { createIfMissing: false })).close();
    after = 'exists';
  } catch (e) {
    after = e instanceof SiltError ? e.code : String(e);
  }
  // And the name can be imported into for real afterwards.
  await importDatabase(
    to,
    await (async () => {
      const s = await open(from);
      try {
        return await bytesOf(s.export());
      } finally {
        s.close();
      }
    })(),
  );
  const copy = await open(to, { createIfMissing: false });
  const count = copy.count();
  copy.close();
  return { code, after, count };
}

/**
 * importDatabase of half an export from a stream that then never ends, for
 * a test that terminates this worker mid-import: progress `half` once the
 * import has taken the half.
 */
export async function importStalled({ from, to }) {
  const bytes = await exportOfNew(from, 5000);
  let sent = false;
  const stalled = new ReadableStream({
    pull(c) {
      if (!sent) {
        sent = true;
        c.enqueue(bytes.subarray(0, bytes.length >> 1));
        return;
      }
      postMessage({ progress: { half: true } });
      return new Promise(() => {}); // never more
    },
  });
  await importDatabase(to, stalled);
}

/** How `name` opens after an import that never finished: with createIfMissing off, then as usual (its count). */
export async function openAfterImport({ name }) {
  const wait = { wait: true, signal: AbortSignal.timeout(5_000) };
  let strict;
  try {
    (await open(name, { ...wait, createIfMissing: false })).close();
    strict = 'exists';
  } catch (e) {
    strict = e instanceof SiltError ? e.code : String(e);
  }
  const db = await open(name, wait);
  const count = db.count();
  db.close();
  return { strict, count };
}

const hexOf = (b) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');

/** Every entry of `db` as [hex key, hex value]. */
function scanHex(db) {
  return [...db.iterator()].map(([k, v]) => [hexOf(k), hexOf(v)]);
}

/**
 * A database of `n` keys with overwrites, deletes, a range delete and a
 * sublevel, exported in the RocksDB form (LZ4, small tables so that there
 * are several): the archive's bytes and what a scan reads.
 */
export async function rocksdbExport({ name, n }) {
  const db = await open(name);
  try {
    for (let i = 0; i < n; i++) db.put(`r${String(i).padStart(6, '0')}`, enc.encode(`value ${i} ${'x'.repeat(i % 50)}`));
    db.flush();
    for (let i = 0; i < n; i += 7) db.put(`r${String(i).padStart(6, '0')}`, enc.encode(`new ${i}`));
    for (let i = 3; i < n; i += 11) db.delete(`r${String(i).padStart(6, '0')}`);
    db.deleteRange('r000100', 'r000200');
    db.sublevel('notes', { valueEncoding: 'json' }).put('a', { title: 'from Chromium' });
    const tar = await bytesOf(db.export({ form: 'rocksdb', compression: 'lz4', targetFileSize: 16 * 1024 }));
    return { tar: Array.from(tar), scan: scanHex(db) };
  } finally {
    db.close();
  }
}

/** importDatabase in the RocksDB form of `bytes` (a table or an archive), then what a scan of the new database reads. */
export async function rocksdbImport({ name, bytes }) {
  const report = await importDatabase(name, new Uint8Array(bytes), { format: 'rocksdb' });
  const db = await open(name);
  try {
    return { report, scan: scanHex(db) };
  } finally {
    db.close();
  }
}

/** A database holding `alpha` and `gamma`, then ingestRocksdb of `bytes`: the report and what a scan reads. */
export async function rocksdbIngest({ name, bytes }) {
  const db = await open(name);
  try {
    db.put('alpha', enc.encode('mine'));
    db.put('gamma', enc.encode('mine'));
    const report = await db.ingestRocksdb(new Uint8Array(bytes));
    return { report, scan: scanHex(db) };
  } finally {
    db.close();
  }
}
