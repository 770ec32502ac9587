// One scenario of encodings, sublevels, ranges, counts, clear and the empty
// key, written once and run against both APIs: a worker's `open()` (calls
// are synchronous; awaiting their results changes nothing) and a page's
// `connect()` (calls return Promises). Its result must be the same.
import { open, SiltError } from '/siltdb/dist/index.js';

const enc = new TextEncoder();

/** The code of the SiltError `f` throws or rejects with. */
async function codeOf(f) {
  try {
    await f();
    return 'none';
  } catch (e) {
    return e instanceof SiltError ? e.code : `not a SiltError: ${e}`;
  }
}

async function collect(it) {
  const out = [];
  for await (const x of it) out.push(x);
  return out;
}

/**
 * `db`: a database opened with `{ keyEncoding: 'utf8', valueEncoding:
 * 'json', mergeOperator: 'append' }`, empty.
 */
export async function levelsShared(db) {
  const out = {};
  const notes = db.sublevel('notes');
  const tags = db.sublevel('tags', { valueEncoding: 'utf8' });
  const drafts = notes.sublevel('drafts');
  const bin = db.sublevel('bin', { keyEncoding: 'view', valueEncoding: 'view' });
  await notes.put('n1', { title: 'first', tags: ['a'] });
  await notes.put('n2', { title: 'second', n: 2 });
  await drafts.put('n1', { title: 'draft' });
  await tags.put('a', 'alpha');
  await db.put('', { root: 'the empty key' });
  await bin.put(new Uint8Array([1, 2]), enc.encode('bytes'));
  out.get = await notes.get('n1');
  out.getMissing = (await notes.get('nope')) ?? null;
  out.multiGet = (await notes.multiGet(['n2', 'nope', 'n1'])).map((v) => v ?? null);
  out.perCall = await codeOf(() => tags.get('a', { valueEncoding: 'json' }));
  out.tag = await tags.get('a');
  out.emptyKey = await db.get('');
  out.entries = await collect(notes.iterator());
  out.keysReverse = await collect(notes.keys({ reverse: true }));
  out.valuesLimited = await collect(notes.values({ limit: 1, gt: 'n0' }));
  out.rootKeys = await collect(db.keys());
  out.counts = [await db.count(), await notes.count(), await drafts.count(), await tags.count({ lt: 'a' }), await db.count({ lte: '' })];

  // A batch and a transaction across sublevels.
  const batch = notes.batch().put('n3', { title: 'third' });
  batch.in(tags).put('b', 'beta');
  batch.in(db).delete('');
  await db.write(batch);
  out.afterBatch = [await notes.get('n3'), await tags.get('b'), (await db.get('')) ?? null];
  out.txResult = await db.transaction(async (tx) => {
    const n = await tx.in(notes).getForUpdate('n2');
    tx.in(notes).put('n2', { ...n, n: n.n + 1 });
    tx.in(tags).put('c', 'gamma');
    const own = await tx.in(tags).get('c');
    const seen = await collect(tx.in(tags).iterator());
    return { own, seen };
  });
  out.afterTx = [await notes.get('n2'), await tags.get('c')];
  out.updated = await notes.update('n3', (v) => ({ ...v, updated: true }));

  // clear: a sublevel, a range of one, the empty key's range.
  await tags.clear({ gte: 'b' });
  out.tagsAfterClear = await collect(tags.keys());
  await drafts.clear();
  out.afterDraftsClear = [await drafts.count(), await notes.count()];
  await db.flush();
  const size = await notes.approximateSize();
  out.sizes = size > 0 && (await db.approximateSize()) >= size;

  // Errors, with their codes.
  out.errors = {
    badValue: await codeOf(() => notes.put('x', undefined)),
    badKey: await codeOf(() => notes.put(3, {})),
    badName: await codeOf(() => db.sublevel('a!b')),
    badLimit: await codeOf(() => collect(notes.keys({ limit: 1.5 }))),
    badRange: await codeOf(() => notes.count({ gt: 'a', gte: 'b' })),
    notUtf8: await codeOf(async () => {
      await bin.put(enc.encode('junk'), new Uint8Array([0xff]));
      return db.sublevel('bin').get('junk');
    }),
  };
  return out;
}

/** `levelsShared` in this worker, on `open()`. */
export async function levelsInWorker({ name }) {
  const db = await open(name, { keyEncoding: 'utf8', valueEncoding: 'json', mergeOperator: 'append' });
  try {
    return await levelsShared(db);
  } finally {
    db.close();
  }
}
