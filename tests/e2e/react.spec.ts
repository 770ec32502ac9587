// siltdb/react (js/src/react.ts, issue 39 item 3) in Chromium with React
// from npm, bundled for the page by esbuild (tests/pages/react-live-app.js),
// in StrictMode: 1,000 components, each `useGet` of its own key, and a list
// (`useLive`); a write from another tab renders only the component whose key
// it changed (counted), and the list; unmounted, nothing listens any more.
import { fileURLToPath } from 'node:url';
import { expect, test } from '@playwright/test';
import { build } from 'esbuild';
import { tab } from './tabs-pages.js';

const ITEMS = 1000;

/** The app and React, one ES module for the page; siltdb is the page's own. */
async function bundle(): Promise<string> {
  const r = await build({
    entryPoints: [fileURLToPath(new URL('../pages/react-live-app.js', import.meta.url))],
    bundle: true,
    format: 'esm',
    write: false,
    define: { 'process.env.NODE_ENV': '"development"' },
    logLevel: 'warning',
  });
  return r.outputFiles[0]!.text;
}

type App = { renders: { items: number[]; list: number }; shown: { items: string[]; list: string }; unmount(): void };

test('1,000 useGet components and a useLive list in StrictMode: a write renders only the component whose key changed; unmounted, nothing listens', async ({
  context,
}) => {
  test.setTimeout(90_000);
  const code = await bundle();
  const a = await tab(context, 'react-live', 'A');
  const b = await tab(context, 'react-live', 'B');
  await a.evaluate(async (n) => {
    const batch = new window.lib.WriteBatch();
    for (let i = 0; i < n; i++) batch.put(`k/${String(i).padStart(4, '0')}`, new TextEncoder().encode(`v${i}`));
    await window.db!.write(batch);
  }, ITEMS);
  // The app, in tab B (a follower): its module is the bundle, as a blob.
  await b.evaluate(
    async ({ code, n }) => {
      const url = URL.createObjectURL(new Blob([code], { type: 'text/javascript' }));
      const { mount } = await import(url);
      (window as unknown as { app: App }).app = mount(window.db, n);
    },
    { code, n: ITEMS },
  );
  await expect
    .poll(() => b.evaluate(() => (window as unknown as { app: App }).app.shown.items.filter((s) => s.startsWith('v')).length), { timeout: 30_000 })
    .toBe(ITEMS);
  await expect.poll(() => b.evaluate(() => (window as unknown as { app: App }).app.shown.list)).toBe('k/0000=v0 k/0001=v1 k/0002=v2 k/0003=v3 k/0004=v4');
  // Counts from now on.
  await b.evaluate(() => {
    const r = (window as unknown as { app: App }).app.renders;
    r.items.fill(0);
    r.list = 0;
  });
  await a.evaluate(async () => {
    await window.db!.put('k/0500', new TextEncoder().encode('changed'));
    await window.db!.put('k/0002', new TextEncoder().encode('in the list'));
    await window.db!.put('other', new TextEncoder().encode('no component shows it'));
  });
  await expect.poll(() => b.evaluate(() => (window as unknown as { app: App }).app.shown.items[500])).toBe('changed');
  await expect
    .poll(() => b.evaluate(() => (window as unknown as { app: App }).app.shown.list))
    .toBe('k/0000=v0 k/0001=v1 k/0002=in the list k/0003=v3 k/0004=v4');
  await b.waitForTimeout(300);
  const renders = await b.evaluate(() => (window as unknown as { app: App }).app.renders);
  const rendered = renders.items.map((n, i) => [i, n] as const).filter(([, n]) => n > 0);
  // StrictMode renders twice in development: the components that changed, and no other.
  expect(rendered.map(([i]) => i)).toEqual([2, 500]);
  expect(renders.list).toBeGreaterThan(0);
  expect(renders.list).toBeLessThanOrEqual(4);
  // Unmounted: no watch is left on B's connection (its leader sends it no more change records).
  expect((await b.evaluate(() => window.db!.statistics())).tabs.watching).toBe(1);
  await b.evaluate(() => (window as unknown as { app: App }).app.unmount());
  await expect.poll(async () => (await b.evaluate(() => window.db!.statistics())).tabs.watching).toBe(0);
  await a.evaluate(() => window.db!.put('k/0500', new TextEncoder().encode('after')));
  await b.waitForTimeout(200);
  expect(await b.evaluate(() => (window as unknown as { app: App }).app.renders.items[500])).toBe(renders.items[500]);
  // suspense: true: the component renders only with a result (a fallback until then), then follows the writes.
  await b.evaluate(
    async ({ code }) => {
      const url = URL.createObjectURL(new Blob([code], { type: 'text/javascript' }));
      const { mountSuspense } = await import(url);
      (window as unknown as { suspense: { seen: string[] } }).suspense = mountSuspense(window.db);
    },
    { code },
  );
  await expect(b.locator('#suspended')).toHaveText('v1');
  await a.evaluate(() => window.db!.put('k/0001', new TextEncoder().encode('v1 again')));
  await expect(b.locator('#suspended')).toHaveText('v1 again');
  expect(await b.evaluate(() => (window as unknown as { suspense: { seen: string[] } }).suspense.seen)).not.toContain('undefined');
  // A query that fails (bytes its json encoding cannot read) throws from the hook, to the error boundary.
  await a.evaluate(() => window.db!.sublevel('j', { valueEncoding: 'json' }).put('x', { n: 1 }));
  await b.evaluate(
    async ({ code }) => {
      const url = URL.createObjectURL(new Blob([code], { type: 'text/javascript' }));
      const { mountFailing } = await import(url);
      mountFailing(window.db);
    },
    { code },
  );
  await expect(b.locator('#json')).toHaveText('{"n":1}');
  await a.evaluate(() => window.db!.put('!j!x', new TextEncoder().encode('not json')));
  await expect(b.locator('#boundary')).toHaveText('failed: InvalidArgument');
  await b.evaluate(() => window.db!.close());
  await a.evaluate(() => window.db!.close());
});
