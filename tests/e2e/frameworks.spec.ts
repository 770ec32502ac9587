// siltdb/vue and siltdb/svelte (issue 39, item 3) in Chromium, with Vue and
// Svelte from npm: a Vue component (useLive, useGet) and a Svelte 5
// component compiled here by svelte/compiler (liveStore and getStore through
// `$store`), bundled for the page by esbuild (tests/pages/frameworks-app.js),
// in a follower tab; the leader's writes show in both, a write elsewhere
// renders nothing, and once both are unmounted nothing listens.
import { fileURLToPath } from 'node:url';
import { expect, test } from '@playwright/test';
import { build } from 'esbuild';
import { compile } from 'svelte/compiler';
import { tab } from './tabs-pages.js';

const NOTES_SVELTE = `<script>
  let { notes, k2, list, one } = $props();
</script>
<p class="list">{list($notes)}</p>
<p class="one">{one($k2)}</p>
`;

/** The apps, Vue and Svelte, one ES module for the page. */
async function bundle(): Promise<string> {
  const svelte = compile(NOTES_SVELTE, { generate: 'client', filename: 'Notes.svelte', dev: false }).js.code;
  const r = await build({
    entryPoints: [fileURLToPath(new URL('../pages/frameworks-app.js', import.meta.url))],
    bundle: true,
    format: 'esm',
    write: false,
    conditions: ['browser'],
    define: {
      'process.env.NODE_ENV': '"production"',
      __VUE_OPTIONS_API__: 'true',
      __VUE_PROD_DEVTOOLS__: 'false',
      __VUE_PROD_HYDRATION_MISMATCH_DETAILS__: 'false',
    },
    logLevel: 'warning',
    plugins: [
      {
        name: 'notes-svelte',
        setup(b) {
          b.onResolve({ filter: /^notes-svelte$/ }, () => ({ path: 'Notes.svelte.js', namespace: 'notes' }));
          b.onLoad({ filter: /.*/, namespace: 'notes' }, () => ({
            contents: svelte,
            loader: 'js',
            resolveDir: fileURLToPath(new URL('../pages/', import.meta.url)),
          }));
        },
      },
    ],
  });
  return r.outputFiles[0]!.text;
}

type Apps = { vue: { state: { renders: number }; unmount(): void }; svelte: { unmount(): void } };
const text = (b: import('@playwright/test').Page, css: string) => b.evaluate((css) => document.querySelector(css)?.textContent ?? '', css);

test('a Vue component and a Svelte component show live queries: the writes of another tab, and nothing once unmounted', async ({ context }) => {
  test.setTimeout(60_000);
  const code = await bundle();
  const a = await tab(context, 'frameworks', 'A');
  const b = await tab(context, 'frameworks', 'B');
  await a.evaluate(async () => {
    for (const i of [1, 2, 3, 4]) await window.db!.put(`k/${i}`, new TextEncoder().encode(`v${i}`));
  });
  await b.evaluate(async (code) => {
    const url = URL.createObjectURL(new Blob([code], { type: 'text/javascript' }));
    const m = await import(url);
    (window as unknown as { apps: Apps }).apps = { vue: m.mountVue(window.db), svelte: m.mountSvelte(window.db) };
  }, code);
  for (const app of ['#vue', '#svelte']) {
    await expect.poll(() => text(b, `${app} .list`)).toBe('k/1=v1 k/2=v2 k/3=v3');
    await expect.poll(() => text(b, `${app} .one`)).toBe('v2');
  }
  const rendersBefore = await b.evaluate(() => (window as unknown as { apps: Apps }).apps.vue.state.renders);
  await a.evaluate(async () => {
    await window.db!.put('other', new TextEncoder().encode('shown by nobody'));
    await window.db!.put('k/9', new TextEncoder().encode('past the three shown'));
  });
  await b.waitForTimeout(300);
  expect(await b.evaluate(() => (window as unknown as { apps: Apps }).apps.vue.state.renders)).toBe(rendersBefore);
  await a.evaluate(async () => {
    await window.db!.put('k/2', new TextEncoder().encode('changed'));
    await window.db!.delete('k/1');
  });
  for (const app of ['#vue', '#svelte']) {
    await expect.poll(() => text(b, `${app} .list`)).toBe('k/2=changed k/3=v3 k/4=v4');
    await expect.poll(() => text(b, `${app} .one`)).toBe('changed');
  }
  expect((await b.evaluate(() => window.db!.statistics())).tabs.watching).toBe(1);
  await b.evaluate(() => {
    const { apps } = window as unknown as { apps: Apps };
    apps.vue.unmount();
    apps.svelte.unmount();
  });
  await expect.poll(async () => (await b.evaluate(() => window.db!.statistics())).tabs.watching).toBe(0);
  await b.evaluate(() => window.db!.close());
  await a.evaluate(() => window.db!.close());
});
