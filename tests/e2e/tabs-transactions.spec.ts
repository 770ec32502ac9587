// Transactions from many tabs through connect() (docs/tabs.md): no update
// lost, sums kept, merges counted, and a leader that goes mid-transaction
// costs a retry.
import { expect, test } from '@playwright/test';
import { leaderOf, tab } from './tabs-pages.js';

test('transactions from three tabs: no update lost, transfers keep the sum, merges count, a follower reads its own writes, and a leader that goes mid-transaction costs a retry', async ({
  context,
}) => {
  const pages = [await tab(context, 'txn', 'A', 'u64add'), await tab(context, 'txn', 'B', 'u64add'), await tab(context, 'txn', 'C', 'u64add')];
  const ACCOUNTS = 10;
  await pages[0]!.evaluate(async (n) => {
    const { db, lib } = window;
    const b = new lib.WriteBatch();
    for (let i = 0; i < n; i++) b.put(`acct/${i}`, lib.u64(100));
    await db!.write(b);
  }, ACCOUNTS);
  // A watch of the merged counter in every tab, from before any merge.
  const since = await pages[0]!.evaluate(() => window.db!.latestSequence());
  type Watching = { kinds: string[]; watch: { close(): void } };
  for (const p of pages) {
    await p.evaluate((since) => {
      const w = window as unknown as Watching;
      w.kinds = [];
      w.watch = window.db!.watch({ since, gte: 'merged', lte: 'merged' }, (e) => w.kinds.push(e.kind));
    }, since);
  }
  // Every tab at once: increments by update, transfers by transaction (two
  // reads for update, an await between reads and writes), counter merges.
  const stats = await Promise.all(
    pages.map((p) =>
      p.evaluate(async (n) => {
        const { db, lib } = window;
        let runs = 0;
        const work: Promise<unknown>[] = [];
        for (let i = 0; i < 30; i++) {
          work.push(db!.update('hits', (v) => lib.u64((v ? lib.readU64(v) : 0n) + 1n), { retries: 1000 }));
          work.push(db!.merge('merged', lib.u64(1)));
        }
        for (let i = 0; i < 20; i++) {
          const from = `acct/${Math.floor(Math.random() * n)}`;
          const to = `acct/${Math.floor(Math.random() * n)}`;
          work.push(
            db!.transaction(
              async (tx) => {
                runs++;
                const [a, b] = [await tx.getForUpdate(from), await tx.getForUpdate(to)];
                await new Promise((r) => setTimeout(r, 1));
                const amount = BigInt(1 + Math.floor(Math.random() * 5));
                tx.put(from, lib.u64(lib.readU64(a!) - amount));
                // (a transfer to itself: the second put wins; the sum stays)
                tx.put(to, lib.u64(lib.readU64(from === to ? lib.u64(lib.readU64(a!) - amount) : b!) + amount));
              },
              { retries: 1000 },
            ),
          );
        }
        await Promise.all(work);
        return { runs };
      }, ACCOUNTS),
    ),
  );
  const totals = await pages[1]!.evaluate(async (n) => {
    const { db, lib } = window;
    const values = await db!.multiGet(Array.from({ length: n }, (_, i) => `acct/${i}`));
    return {
      sum: Number([...values].reduce((s, v) => s + lib.readU64(v!), 0n)),
      hits: Number(lib.readU64((await db!.get('hits'))!)),
      merged: Number(lib.readU64((await db!.get('merged'))!)),
    };
  }, ACCOUNTS);
  expect(totals).toEqual({ sum: 100 * ACCOUNTS, hits: 90, merged: 90 });
  for (const p of pages) {
    const merges = () => p.evaluate(() => (window as unknown as Watching).kinds.filter((k) => k === 'merge').length);
    await expect.poll(merges).toBe(90);
    await p.evaluate(() => (window as unknown as Watching).watch.close());
  }
  // Every transfer committed once; some ran again after a conflict.
  expect(stats.reduce((a, s) => a + s.runs, 0)).toBeGreaterThanOrEqual(60);

  const leader = await leaderOf(pages);
  const follower = pages[(leader + 1) % 3]!;
  const other = pages[(leader + 2) % 3]!;
  // A follower's transaction reads its own writes in every read API.
  const own = await follower.evaluate(async () => {
    const { db, lib } = window;
    const dec = new TextDecoder();
    await db!.write(new lib.WriteBatch().put('r/2', lib.u64(2)).put('r/3', lib.u64(3)).put('r/c', lib.u64(1)));
    const tx = db!.begin();
    tx.put('r/1', lib.u64(1));
    tx.delete('r/2');
    tx.merge('r/c', lib.u64(5));
    const got = [await tx.get('r/1'), await tx.get('r/2'), await tx.get('r/c')].map((v) => (v ? Number(lib.readU64(v)) : null));
    const multi = (await tx.multiGet(['r/1', 'r/2', 'r/3', 'r/c'])).map((v) => (v ? Number(lib.readU64(v)) : null));
    const keys: string[] = [];
    for await (const [k] of tx.iterator({ gte: 'r/', lt: 'r0' })) keys.push(dec.decode(k));
    const reverse: string[] = [];
    for await (const [k] of tx.iterator({ gte: 'r/', lt: 'r0', reverse: true, batchSize: 1 })) reverse.push(dec.decode(k));
    const outside = await db!.get('r/1');
    await tx.commit();
    let after = 'none';
    try {
      await tx.get('r/1');
    } catch (e) {
      after = (e as { code: string }).code;
    }
    return { got, multi, keys, reverse, outside: outside ?? null, committed: Number(lib.readU64((await db!.get('r/c'))!)), after };
  });
  expect(own).toEqual({
    got: [1, null, 6],
    multi: [1, null, 3, 6],
    keys: ['r/1', 'r/3', 'r/c'],
    reverse: ['r/c', 'r/3', 'r/1'],
    outside: null,
    committed: 6,
    after: 'Released',
  });
  // A conflict with another tab's write, with no retries: Conflict, nothing written.
  await follower.evaluate(async () => {
    const tx = window.db!.begin();
    await tx.getForUpdate('contested');
    tx.put('contested-too', new Uint8Array([1]));
    (window as unknown as { tx: unknown }).tx = tx;
  });
  await other.evaluate(() => window.db!.put('contested', new Uint8Array([2])));
  const conflict = await follower.evaluate(async () => {
    const tx = (window as unknown as { tx: { put(k: string, v: Uint8Array): void; commit(): Promise<void> } }).tx;
    tx.put('contested', new Uint8Array([1]));
    try {
      await tx.commit();
      return 'committed';
    } catch (e) {
      return `${(e as { code: string }).code} ${(await window.db!.get('contested-too')) === undefined}`;
    }
  });
  expect(conflict).toBe('Conflict true');
  // The leader goes while a follower's transaction is open between its read
  // and its write: the transaction runs again on the new leader, and commits once.
  await follower.evaluate(() => {
    const w = window as unknown as { runs: number; goAhead: Promise<void>; go: () => void; done: Promise<unknown> };
    w.runs = 0;
    w.goAhead = new Promise((r) => (w.go = r));
    w.done = window.db!.transaction(async (tx) => {
      w.runs++;
      const v = await tx.getForUpdate('failover');
      await w.goAhead;
      tx.put('failover', window.lib.u64((v ? window.lib.readU64(v) : 0n) + 1n));
    });
  });
  await expect.poll(() => follower.evaluate(() => (window as unknown as { runs: number }).runs)).toBe(1);
  await pages[leader]!.close({ runBeforeUnload: false });
  // Once another tab leads (the closed tab's worker may live a moment
  // longer and would still take the commit), let the transaction go on.
  await leaderOf([follower, other]);
  const failover = await follower.evaluate(async () => {
    const w = window as unknown as { runs: number; go: () => void; done: Promise<unknown> };
    w.go();
    await w.done;
    return { runs: w.runs, value: Number(window.lib.readU64((await window.db!.get('failover'))!)) };
  });
  expect(failover.value).toBe(1);
  expect(failover.runs).toBe(2);
  for (const p of [follower, other]) await p.evaluate(() => window.db!.close());
});
