// Live queries and watches with values across real tabs (issue 39): a
// follower's `live` range and `liveGet` follow another tab's writes, read the
// database again only when the events cannot tell them what to show, and go
// on across a failover (the leading tab closed); a watch with values gets
// them while another tab's watch of keys gets none.
import { expect, test } from '@playwright/test';
import { leaderOf, tab } from './tabs-pages.js';

type LivePage = { results: string[]; values: string[]; changes: string[]; reads: () => number };

test('a live range and liveGet in another tab follow every write, across a failover; values go only where asked', async ({ context }) => {
  const a = await tab(context, 'live-tabs', 'A');
  const b = await tab(context, 'live-tabs', 'B');
  expect(await leaderOf([a, b])).toBe(0);
  await a.evaluate(async () => {
    const enc = new TextEncoder();
    for (const k of ['n/1', 'n/2', 'n/3', 'n/4']) await window.db!.put(k, enc.encode(`${k} v1`));
    const keysOnly: string[] = [];
    window.db!.watch({ gte: 'n/', lt: 'n0' }, (e) => keysOnly.push('value' in e ? 'with a value' : e.kind));
    (window as unknown as { keysOnly: string[] }).keysOnly = keysOnly;
  });
  await b.evaluate(() => {
    const dec = new TextDecoder();
    const text = (v: Uint8Array | undefined) => (v === undefined ? '-' : dec.decode(v));
    const live = window.db!.live({ gte: 'n/', lt: 'n0', limit: 3 });
    const s: LivePage = { results: [], values: [], changes: [], reads: () => live.reads };
    (window as unknown as { live: LivePage }).live = s;
    live.subscribe((r) => s.results.push(r.entries.map(([k, v]) => `${dec.decode(k)}=${text(v)}`).join(' ')));
    window.db!.liveGet('n/2').subscribe((r) => s.values.push(text(r.value)));
    window.db!.watch({ gte: 'n/', lt: 'n0', values: true }, (e) => {
      if (e.kind !== 'gap' && 'value' in e) s.changes.push(`${e.kind} ${dec.decode(e.key)} ${text(e.value as Uint8Array | undefined)}`);
    });
  });
  await expect.poll(() => b.evaluate(() => (window as unknown as { live: LivePage }).live.results.length)).toBe(1);
  // Writes from the leading tab: inside the window, past it, outside the range.
  await a.evaluate(async () => {
    const enc = new TextEncoder();
    await window.db!.put('n/2', enc.encode('n/2 v2'));
    await window.db!.put('n/9', enc.encode('past the window'));
    await window.db!.put('other', enc.encode('outside'));
    await window.db!.delete('n/1');
  });
  await expect.poll(() => b.evaluate(() => (window as unknown as { live: LivePage }).live.results.at(-1))).toBe('n/2=n/2 v2 n/3=n/3 v1 n/4=n/4 v1');
  expect(await b.evaluate(() => (window as unknown as { live: LivePage }).live.results)).toEqual([
    'n/1=n/1 v1 n/2=n/2 v1 n/3=n/3 v1',
    'n/1=n/1 v1 n/2=n/2 v2 n/3=n/3 v1',
    'n/2=n/2 v2 n/3=n/3 v1 n/4=n/4 v1',
  ]);
  // One read at the start, one when n/1 left the full window; none for n/9 or other.
  expect(await b.evaluate(() => (window as unknown as { live: LivePage }).live.reads())).toBe(2);
  await expect.poll(() => b.evaluate(() => (window as unknown as { live: LivePage }).live.changes.length)).toBe(3);
  expect(await b.evaluate(() => (window as unknown as { live: LivePage }).live.changes)).toEqual(['put n/2 n/2 v2', 'put n/9 past the window', 'delete n/1 -']);
  await expect.poll(() => a.evaluate(() => (window as unknown as { keysOnly: string[] }).keysOnly.length)).toBe(3);
  expect(await a.evaluate(() => (window as unknown as { keysOnly: string[] }).keysOnly)).toEqual(['put', 'put', 'delete']);
  // The leading tab closes: B leads, and its queries go on with its own writes.
  await a.close();
  await expect.poll(() => b.evaluate(() => window.db!.isLeader), { timeout: 15_000 }).toBe(true);
  await b.evaluate(async () => {
    const enc = new TextEncoder();
    await window.db!.put('n/2', enc.encode('n/2 v3'));
    await window.db!.put('n/0', enc.encode('first'));
  });
  await expect.poll(() => b.evaluate(() => (window as unknown as { live: LivePage }).live.results.at(-1))).toBe('n/0=first n/2=n/2 v3 n/3=n/3 v1');
  await expect.poll(() => b.evaluate(() => (window as unknown as { live: LivePage }).live.values.at(-1))).toBe('n/2 v3');
  expect(await b.evaluate(() => (window as unknown as { live: LivePage }).live.values)).toEqual(['n/2 v1', 'n/2 v2', 'n/2 v3']);
  await b.evaluate(() => window.db!.close());
});
