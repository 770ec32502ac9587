// Encodings and sublevels: 'utf8', 'json' and custom encodings both ways,
// what they refuse; sublevels that keep their keys apart, nest, and take
// part in batches and transactions across sublevels. The type-level checks
// (the generics type every read and write) are in js/test/levels.test.ts.
import { eq, fails } from './check.js';
import { bytes, collect, scenario, text } from './scenario.js';

/** Every key and value under `db`, as stored there (bytes), as text. */
async function rawOf(db) {
  const out = [];
  for await (const [k, v] of db.iterator({ keyEncoding: 'view', valueEncoding: 'view' })) out.push([text(k), text(v)]);
  return out;
}

export default [
  scenario("'utf8' keys and 'json' values round-trip in get, multiGet, iterators, keys() and values(), stored as plain text", async (t) => {
    const db = await t.open({ keyEncoding: 'utf8', valueEncoding: 'json' });
    await db.put('n1', { title: 'first', tags: ['a'] });
    await db.put('n2', { title: 'second', tags: [] });
    eq(await db.get('n1'), { title: 'first', tags: ['a'] }, 'get');
    eq(await db.get('nope'), undefined, 'get of a missing key');
    eq(
      (await db.multiGet(['n2', 'nope', 'n1'])).map((n) => n?.title),
      ['second', undefined, 'first'],
      'multiGet',
    );
    eq(
      await collect(db.iterator()),
      [
        ['n1', { title: 'first', tags: ['a'] }],
        ['n2', { title: 'second', tags: [] }],
      ],
      'entries',
    );
    eq(await collect(db.keys()), ['n1', 'n2'], 'keys()');
    eq(
      (await collect(db.values({ reverse: true }))).map((n) => n.title),
      ['second', 'first'],
      'values() in reverse',
    );
    eq(
      await rawOf(db),
      [
        ['n1', '{"title":"first","tags":["a"]}'],
        ['n2', '{"title":"second","tags":[]}'],
      ],
      'the bytes stored',
    );
  }),

  scenario('a custom encoding is used both ways, and what it gets wrong is a typed error', async (t) => {
    const u32 = {
      name: 'u32',
      encode: (n) => new Uint8Array(new Uint32Array([n]).buffer),
      decode: (b) => new DataView(b.buffer, b.byteOffset, b.byteLength).getUint32(0, true),
    };
    const db = await t.open({ keyEncoding: 'utf8', valueEncoding: u32 });
    await db.put('a', 7);
    eq(await db.get('a'), 7, 'get');
    eq(await db.multiGet(['a', 'b']), [7, undefined], 'multiGet');
    eq(await collect(db.values()), [7], 'values()');
    const bad = db.sublevel('bad', { valueEncoding: { encode: () => 'no', decode: () => 0 } });
    await fails(() => bad.put('x', 1), 'InvalidArgument', /encode must return a Uint8Array/);
    const throwing = db.sublevel('t', {
      valueEncoding: {
        encode: () => new Uint8Array(1),
        decode: () => {
          throw new RangeError('boom');
        },
      },
    });
    await throwing.put('x', 1);
    const e = await fails(() => throwing.get('x'), 'InvalidArgument', /could not decode a stored value: boom/);
    eq(e.cause instanceof RangeError, true, 'the cause is the RangeError thrown');
  }),

  scenario('wrong values for an encoding, bad encodings, and bytes a decoder cannot read are InvalidArgument', async (t) => {
    const db = await t.open({ keyEncoding: 'utf8', valueEncoding: 'json' });
    await fails(() => db.put('f', () => 1), 'InvalidArgument', /'json' encoding cannot encode/);
    await fails(() => db.put('u', undefined), 'InvalidArgument');
    const cyclic = {};
    cyclic.self = cyclic;
    await fails(() => db.put('c', cyclic), 'InvalidArgument');
    await fails(() => db.put(7, 1), 'InvalidArgument', /'utf8' encoding takes strings/);
    await fails(() => t.open({ valueEncoding: 'yaml' }), 'InvalidArgument');
    await fails(() => t.open({ keyEncoding: { encode: 1 } }), 'InvalidArgument');
    // Bytes written without the encoding.
    await db.sublevel('raw', { valueEncoding: 'view' }).put('x', new Uint8Array([0xff, 0xfe]));
    await fails(() => db.sublevel('raw').get('x'), 'InvalidArgument', /not valid UTF-8/);
    await db.sublevel('raw', { valueEncoding: 'utf8' }).put('y', 'not json');
    await fails(() => db.sublevel('raw').get('y'), 'InvalidArgument', /not JSON/);
    await db.sublevel('raw', { valueEncoding: 'utf8' }).put('z', 'alpha');
    await fails(() => db.sublevel('raw', { valueEncoding: 'utf8' }).get('z', { valueEncoding: 'json' }), 'InvalidArgument', /not JSON/);
    const bin = db.sublevel('bin', { keyEncoding: 'view', valueEncoding: 'view' });
    await bin.put(bytes('junk'), new Uint8Array([0xff]));
    await fails(() => db.sublevel('bin', { valueEncoding: 'utf8' }).get('junk'), 'InvalidArgument', /not valid UTF-8/);
  }),

  scenario('sublevels keep their keys apart, nest, and each reads, iterates, counts and clears only its own', async (t) => {
    const db = await t.open({ keyEncoding: 'utf8', valueEncoding: 'utf8' });
    const users = db.sublevel('users');
    const posts = db.sublevel('posts');
    const drafts = posts.sublevel('drafts');
    const userz = db.sublevel('users2'); // a name that extends another's
    await db.put('top', 'root value');
    await users.put('ann', 'u-ann');
    await users.put('bob', 'u-bob');
    await userz.put('ann', 'u2-ann');
    await posts.put('p1', 'post 1');
    await drafts.put('p1', 'draft 1');
    eq([await users.get('ann'), await userz.get('ann'), await posts.get('p1'), await drafts.get('p1')], ['u-ann', 'u2-ann', 'post 1', 'draft 1'], 'gets');
    eq(await db.get('ann'), undefined, "a sublevel's key, from its parent");
    eq(await collect(users.keys()), ['ann', 'bob'], "users' keys");
    // A parent's range holds its nested sublevels' keys, as in the Level packages.
    eq(
      await collect(posts.iterator()),
      [
        ['!drafts!p1', 'draft 1'],
        ['p1', 'post 1'],
      ],
      "posts' entries",
    );
    eq(await collect(drafts.entries()), [['p1', 'draft 1']], "drafts' entries");
    eq(await collect(posts.keys({ reverse: true })), ['p1', '!drafts!p1'], "posts' keys in reverse");
    eq([await users.count(), await userz.count(), await posts.count(), await db.count()], [2, 1, 2, 6], 'counts');
    eq([drafts.path, db.sublevel('x').path.length - db.path.length], [[...db.path, 'posts', 'drafts'], 1], 'paths');
    // Prefixes as documented in docs/format.md.
    eq(
      (await rawOf(db)).map(([k]) => k),
      ['!posts!!drafts!p1', '!posts!p1', '!users!ann', '!users!bob', '!users2!ann', 'top'],
      'the keys stored',
    );
    await users.clear();
    eq([await users.count(), await userz.get('ann')], [0, 'u2-ann'], 'after users.clear()');
    await posts.clear();
    eq(await drafts.get('p1'), undefined, "a nested sublevel's key, after its parent's clear()"); // inside its parent's range
    eq(await db.get('top'), 'root value', 'the root key');
    // A sublevel's own encodings; its parent's by default.
    const bin = db.sublevel('bin', { keyEncoding: 'view', valueEncoding: 'view' });
    await bin.put(new Uint8Array([0]), new Uint8Array([1, 2]));
    eq(await bin.get(new Uint8Array([0])), new Uint8Array([1, 2]), "a 'view' sublevel's value");
    await db.sublevel('inherit').put('k', 'text');
    eq(await db.sublevel('inherit', { valueEncoding: 'view' }).get('k'), bytes('text'), "an inheriting sublevel's value, as bytes");
    eq(await db.sublevel('inherit').sublevel('x').count(), 0, 'an empty nested sublevel');
  }),

  scenario('sublevel names are checked', async (t) => {
    const db = await t.open();
    for (const bad of ['', 'a!b', '!', 3, undefined, '\ud800'])
      await fails(() => db.sublevel(bad), 'InvalidArgument', /sublevel name must be a non-empty string without '!'/);
  }),

  scenario('a batch and a transaction span sublevels atomically; update() decodes', async (t) => {
    const db = await t.open({ keyEncoding: 'utf8', valueEncoding: 'utf8' });
    const a = db.sublevel('a');
    const b = db.sublevel('b', { valueEncoding: 'json' });
    const batch = a.batch().put('x', 'ax').put('y', 'ay');
    batch.in(b).put('x', 42).delete('gone');
    batch.in(db).put('root', 'r');
    eq(batch.length, 5, "the batch's length");
    await db.write(batch);
    eq([await a.get('x'), await b.get('x'), await db.get('root')], ['ax', 42, 'r'], 'written by the batch');
    // A bad update anywhere in the batch: nothing of it is written.
    await fails(() => a.batch().put('z', 'az').in(b).put('z', undefined), 'InvalidArgument');
    eq(await a.get('z'), undefined, 'the good put of a bad batch');

    const seen = await db.transaction(async (tx) => {
      const tb = tx.in(b);
      const n = (await tb.getForUpdate('x')) ?? 0;
      tb.put('x', n + 1);
      tx.in(a).put('x', `ax${n + 1}`);
      eq(await tb.get('x'), 43, 'own write, decoded');
      return collect(tx.in(a).iterator());
    });
    eq(
      seen,
      [
        ['x', 'ax43'],
        ['y', 'ay'],
      ],
      "a sublevel's entries in the transaction",
    );
    eq([await b.get('x'), await a.get('x')], [43, 'ax43'], 'committed');
    const other = await t.open();
    await fails(() => db.transaction((tx) => tx.in(other)), 'InvalidArgument');
    // update() with decoded values.
    eq(await b.update('x', (n) => (n ?? 0) * 2), 86, 'update()');
    eq(await b.update('x', () => null), undefined, 'update() to null');
    eq(await b.get('x'), undefined, 'deleted by update()');
  }),

  scenario("merge and deleteRange take a sublevel's keys", async (t) => {
    const db = await t.open({ mergeOperator: 'append', keyEncoding: 'utf8' });
    const log = db.sublevel('log');
    await log.merge('l', bytes('a'));
    await log.merge('l', bytes('b'));
    eq(text(await log.get('l')), 'ab', 'merged');
    eq(await db.get('l'), undefined, "the sublevel's key, from its parent");
    await log.put('m', bytes('1'));
    await log.put('n', bytes('2'));
    await log.deleteRange('l', 'n');
    eq(await collect(log.keys()), ['n'], 'keys left');
  }),
];
