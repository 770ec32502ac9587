// A page's cold start (issue 34, item 5), as a regression gate on what the
// first read waits for, not on its time: the page fetches siltdb's bundles
// and nothing else of it (no module waterfall: js/scripts/bundle.mjs), and
// between connect() and the first value the page and siltdb's worker
// exchange only what opening the database and the get itself need: the
// worker's start, `open`, its `locked` and `opened`, the get and its
// answer. A round trip added in front of the first request (a query, a
// handshake, a wait for a timer's message) shows up here as a message more.
// The time itself is measured by `npm run bench:page` (docs/bench/page.md).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect, test, type Page, type Request } from '@playwright/test';

/**
 * The chunks siltdb's entries (index.js, worker.js) import statically, as
 * /siltdb/dist/ paths: what a page on OPFS loads. A chunk imported with
 * import() where it is used (the IndexedDB storage) is not among them.
 */
function staticChunks(): string[] {
  const dist = fileURLToPath(new URL('../../js/dist/', import.meta.url));
  const names = ['index.js', 'worker.js'];
  const chunks = new Set<string>();
  for (let i = 0; i < names.length; i++) {
    const text = readFileSync(`${dist}${names[i]}`, 'utf8');
    for (const m of text.matchAll(/(?:^|[\s;])(?:import|export)\s*(?:[\w*{}\s,$]+?\s*from\s*)?['"]\.\/(silt-[A-Z0-9]+\.js)['"]/g)) {
      if (!names.includes(m[1]!)) names.push(m[1]!);
      chunks.add(`/siltdb/dist/${m[1]}`);
    }
  }
  return [...chunks].sort();
}

type Result = { value: string | undefined; log: string[]; files: string[]; fetched: string[] };

async function visit(page: Page, name: string, fill = 0): Promise<Result> {
  // Every request of the page and of its workers (the page's resource
  // timeline has the worker's script, not what the worker fetches: its
  // chunk and the wasm), until the first value.
  const fetched: string[] = [];
  const onRequest = (r: Request) => {
    const path = new URL(r.url()).pathname;
    if (path.startsWith('/siltdb/')) fetched.push(path);
  };
  page.context().on('request', onRequest);
  try {
    return { ...(await load(page, name, fill)), fetched };
  } finally {
    page.context().off('request', onRequest);
  }
}

async function load(page: Page, name: string, fill: number): Promise<Omit<Result, 'fetched'>> {
  await page.goto(`/test-pages/cold-start.html?name=${name}${fill ? `#fill=${fill}` : ''}`);
  await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.state ?? ''), null, { timeout: 60_000 });
  const r = await page.evaluate(() => ({
    state: document.body.dataset.state,
    result: (window as { result?: Result }).result,
    failure: (window as { failure?: string }).failure,
  }));
  if (r.state !== 'done') throw new Error(`the cold start failed: ${r.failure}`);
  return r.result!;
}

/** The messages of a cold start, but for a liveness ping (connection.ts's `#checkExclusive`, after a second without word on a slow machine). */
const essential = (log: string[]) => log.filter((m) => m !== 'out ping' && m !== 'in pong');

const EXPECTED = ['start worker.js', 'out wasm', 'out open', 'in locked', 'in opened', 'out get', 'in answer'];
const BUNDLES = /^\/siltdb\/dist\/(index\.js|worker\.js|broker\.js|silt-[A-Z0-9]+\.js|silt_wasm_bg\.wasm)$/;

test('a cold start fetches only the bundles, and the first get waits for nothing but the opening', async ({ context }) => {
  const name = `cold-${Date.now()}`;
  const first = await context.newPage();
  const created = await visit(first, name, 3);
  expect(created.value).toBeUndefined();
  await first.close();

  // A return visit: the database is there (its worker recovers the log the closed tab left).
  const again = await context.newPage();
  try {
    const back = await visit(again, name);
    expect(back.value).toBe('v0');
    for (const r of [created, back]) {
      expect(essential(r.log)).toEqual(EXPECTED);
      expect(r.files.filter((f) => !BUNDLES.test(f))).toEqual([]);
      expect(r.files).toContain('/siltdb/dist/index.js');
      expect(r.files).toContain('/siltdb/dist/worker.js');
      // What the page and its workers fetched: the bundles, the wasm once, the chunks the entries import statically.
      expect(r.fetched.filter((f) => !BUNDLES.test(f))).toEqual([]);
      expect(r.fetched.filter((f) => f.endsWith('.wasm'))).toEqual(['/siltdb/dist/silt_wasm_bg.wasm']);
      expect([...new Set(r.fetched.filter((f) => /silt-[A-Z0-9]+\.js$/.test(f)))].sort()).toEqual(staticChunks());
    }
  } finally {
    await again.close();
  }
});
