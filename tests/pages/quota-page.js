// maxBytes on real OPFS through connect(), run on a page by the Chromium
// test (tests/e2e/quota.spec.ts) and the Firefox suite (tests/firefox/run.mjs):
// fill a capped database until a write fails, then check what the test
// expects (see quota.spec.ts).
import { connect, removeDatabase, SiltError, WriteBatch } from '/siltdb/dist/index.js';

/** Fills a database capped at 4 MiB until QuotaExceeded; what was kept, and that it reopens and recovers. */
export async function cappedDatabase() {
  const MAX = 4 << 20;
  const options = { maxBytes: MAX, writeBufferSize: 64 * 1024 };
  const key = (i) => `key-${String(i).padStart(7, '0')}`;
  // Incompressible values, so that LZ4 does not postpone the cap.
  const value = (i) => {
    const v = crypto.getRandomValues(new Uint8Array(1000));
    v[0] = i % 251;
    return v;
  };
  await removeDatabase('quota-e2e');
  let db = await connect('quota-e2e', options);
  let acked = 0;
  let error;
  try {
    // 32 puts per batch: a batch is all or nothing.
    for (let b = 0; b < 10_000 && !error; b++) {
      const batch = new WriteBatch();
      for (let i = acked; i < acked + 32; i++) batch.put(key(i), value(i));
      try {
        await db.write(batch);
        acked += 32;
      } catch (e) {
        error = e instanceof SiltError ? { code: e.code, message: e.message } : { code: 'not a SiltError', message: String(e) };
      }
    }
    const failedVisible = (await db.get(key(acked))) !== undefined;
    const reads = await db.multiGet(Array.from({ length: acked }, (_, i) => key(i)));
    const lost = [...reads].filter((v, i) => v === undefined || v[0] !== i % 251 || v.length !== 1000).length;
    const verified = await db.verify();
    const stats = await db.statistics();
    await db.close();

    db = await connect('quota-e2e', options); // a full database reopens
    const afterReopen = (await db.get(key(acked - 1)))?.[0];
    await db.deleteRange(key(0), key(acked - 64));
    await db.compactRange();
    const freed = (await db.statistics()).pool.bytes;
    for (let i = 0; i < 200; i++) await db.put(`new-${i}`, value(i));
    await db.idle();
    const newOk = (await db.get('new-199'))?.[0] === 199 % 251;
    const keptOk = (await db.get(key(acked - 1)))?.[0] === (acked - 1) % 251;
    const deletedGone = (await db.get(key(5))) === undefined;
    await db.verify();
    return {
      code: error?.code,
      message: error?.message ?? '',
      acked,
      failedVisible,
      lost,
      tables: verified.tables,
      bytes: stats.pool.bytes,
      maxBytes: stats.pool.maxBytes,
      afterReopen,
      freed,
      newOk,
      keptOk,
      deletedGone,
      MAX,
    };
  } finally {
    await db.close();
    await removeDatabase('quota-e2e');
  }
}
