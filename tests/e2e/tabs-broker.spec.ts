// The broker's SharedWorker dies under the tabs (docs/tabs.md, "The
// broker"): a SharedWorker runs in a renderer process that can crash with
// another tab, and no event tells its pages; what they post to it goes
// nowhere. Here DevTools ends it (Target.closeTarget), then the leader's tab
// closes: the follower's attempt through its broker gets no answer, and it
// must link to the new leader all the same; a tab that comes later starts a
// new broker, which the leader registers with.
import { expect, test } from '@playwright/test';
import { leaderOf, tab } from './tabs-pages.js';

test("the broker's SharedWorker dies, then the leader's tab closes: the followers link to the new leader, and a new tab too", async ({ context, browser }) => {
  const a = await tab(context, 'broker-dies', 'A');
  const b = await tab(context, 'broker-dies', 'B');
  const c = await tab(context, 'broker-dies', 'C');
  const pages = [a, b, c];
  expect(await leaderOf(pages)).toBe(0);
  await b.evaluate(() => window.db!.put('k', new Uint8Array([1])));
  await c.evaluate(() => window.db!.put('k', new Uint8Array([2])));

  const cdp = await browser.newBrowserCDPSession();
  try {
    const brokers = async () =>
      ((await cdp.send('Target.getTargets')) as { targetInfos: { targetId: string; type: string; url: string }[] }).targetInfos.filter(
        (t) => t.type === 'shared_worker' && t.url.includes('broker'),
      );
    const before = await brokers();
    expect(before.length).toBe(1);
    await cdp.send('Target.closeTarget', { targetId: before[0]!.targetId });
    await expect.poll(async () => (await brokers()).length, { timeout: 10_000 }).toBe(0);
  } finally {
    await cdp.detach();
  }

  await a.close({ runBeforeUnload: false });
  pages.shift();
  const next = await leaderOf(pages);
  const follower = pages[1 - next]!;
  // The follower's calls settle (they waited for ever before the fix).
  const got = await follower.evaluate(async () => {
    await window.db!.put('k', new Uint8Array([3]));
    return (await window.db!.get('k'))?.[0];
  });
  expect(got).toBe(3);
  // A tab that comes now starts a new broker instance.
  const d = await tab(context, 'broker-dies', 'D');
  expect(await d.evaluate(async () => (await window.db!.get('k'))?.[0])).toBe(3);
  const e = await tab(context, 'broker-dies', 'E');
  expect(await e.evaluate(async () => (await window.db!.get('k'))?.[0])).toBe(3);
  for (const p of [...pages, d, e]) await p.evaluate(() => window.db!.close());
});
