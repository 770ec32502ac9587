// Backups in Chromium: an export written here is the fixture the native
// engine imports (crates/engine/tests/backup.rs), importDatabase round trips
// and refuses damaged exports on real OPFS, and connect() exports and
// imports the same bytes as a worker's open().
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect, test, type Page } from '@playwright/test';
import { newWorker, openHarness, run, runFresh } from './harness.js';

/** The fixture of each form: entries (format version 1) and tables (2). */
const FIXTURES = {
  entries: fileURLToPath(new URL('../../crates/engine/tests/fixtures/chromium-export-v1.siltdump', import.meta.url)),
  tables: fileURLToPath(new URL('../../crates/engine/tests/fixtures/chromium-export-v2.siltdump', import.meta.url)),
};

type Lib = typeof import('../../js/src/index.js');
declare global {
  interface Window {
    lib: Lib;
  }
}

async function loadLib(page: Page): Promise<void> {
  await openHarness(page);
  await page.evaluate(async () => {
    window.lib = (await import('/siltdb/dist/index.js' as string)) as Lib;
  });
}

test('an export made in Chromium, in either form, is the fixture the native engine imports, byte for byte', async ({ page }) => {
  await openHarness(page);
  for (const form of ['entries', 'tables'] as const) {
    const bytes = Buffer.from(await runFresh<number[]>(page, 'fixtureExport', { name: `fixture-src-${form}`, form }));
    if (process.env.SILT_WRITE_FIXTURE === '1') writeFileSync(FIXTURES[form], bytes);
    expect(bytes.subarray(0, 8).toString('latin1')).toBe('SILTDUMP');
    expect(bytes[8], form).toBe(form === 'entries' ? 1 : 2);
    expect(
      bytes.equals(readFileSync(FIXTURES[form])),
      `the ${form} export equals the committed fixture (regenerate with SILT_WRITE_FIXTURE=1 only for a new format version)`,
    ).toBe(true);
  }
});

test('a worker terminated in the middle of importDatabase leaves no database: the next open finds none', async ({ page }) => {
  await openHarness(page);
  const w = await newWorker(page);
  await page.evaluate((w) => window.silt.start(w, 'importStalled', { from: 'stalled-src', to: 'stalled-copy' }), w);
  await page.waitForFunction((w) => window.silt.progress(w).half === true, w);
  await page.evaluate((w) => window.silt.terminate(w), w);
  expect(await runFresh(page, 'openAfterImport', { name: 'stalled-copy' })).toEqual({ strict: 'NotFound', count: 0 });
});

test('importDatabase copies a database on OPFS, and a damaged or truncated export leaves no database', async ({ page }) => {
  await openHarness(page);
  const r = await runFresh<{ report: { entries: number; tableFiles: number }; count: number; last: string; verified: number }>(page, 'importRoundTrip', {
    from: 'backup-src',
    to: 'backup-copy',
    n: 20_000,
  });
  expect(r.report.entries).toBe(20_000);
  expect(r.report.tableFiles).toBeGreaterThanOrEqual(1);
  expect(r.count).toBe(20_000);
  expect(r.last).toBe('v19999');
  expect(r.verified).toBe(20_000);
  for (const damage of ['flip', 'truncate']) {
    const d = await run<{ code: string; after: string; count: number }>(page, await newWorker(page), 'importDamaged', {
      from: `damaged-src-${damage}`,
      to: `damaged-copy-${damage}`,
      damage,
    });
    expect(d.code, damage).toBe(damage === 'flip' ? 'ChecksumMismatch' : 'Corruption');
    expect(d.after, `${damage}: the database is not there`).toBe('NotFound');
    expect(d.count, `${damage}: and a good export imports under that name`).toBe(5000);
  }
});

test('through connect(): export and import the same bytes as in a worker, and refuse a damaged export', async ({ page }) => {
  await loadLib(page);
  const r = await page.evaluate(async () => {
    const { connect, SiltError } = window.lib;
    const bytesOf = async (s: ReadableStream<Uint8Array>) => new Uint8Array(await new Response(s).arrayBuffer());
    const src = await connect<string, { n: number }>('remote-backup-src', { keyEncoding: 'utf8', valueEncoding: 'json' });
    const dst = await connect<string, { n: number }>('remote-backup-dst', { keyEncoding: 'utf8', valueEncoding: 'json' });
    const bad = await connect('remote-backup-bad');
    try {
      const b = src.batch();
      for (let i = 0; i < 3000; i++) b.put(`k${String(i).padStart(5, '0')}`, { n: i });
      await src.write(b);
      await src.sublevel('s').put('x', { n: -1 });
      const bytes = await bytesOf(src.export());
      const part = await bytesOf(src.export({ gte: 'k00010', lt: 'k00020' }));
      const report = await dst.import(new Blob([bytes]));
      const damaged = bytes.slice();
      damaged[damaged.length >> 1]! ^= 1;
      let code = 'none';
      try {
        await bad.import(damaged);
      } catch (e) {
        code = e instanceof SiltError ? e.code : String(e);
      }
      // The records connect() keeps for its writes travel with the tables
      // (of connections that never send to the copy): hidden there too.
      const again = await bytesOf(dst.export());
      return {
        entries: report.entries,
        count: await dst.count(),
        last: await dst.get('k02999'),
        sub: await dst.sublevel('s').get('x'),
        partBytes: part.length,
        code,
        badCount: await bad.count(),
        sameBytes: again.length === bytes.length,
      };
    } finally {
      await src.close();
      await dst.close();
      await bad.close();
    }
  });
  // The tables form: every entry of the tables, the leader's write
  // records (which connect() hides) among them.
  expect(r.entries).toBeGreaterThanOrEqual(3001);
  expect(r).toEqual({
    entries: r.entries,
    count: 3001,
    last: { n: 2999 },
    sub: { n: -1 },
    partBytes: r.partBytes,
    code: 'ChecksumMismatch',
    badCount: 0,
    sameBytes: true,
  });
  expect(r.partBytes).toBeLessThan(1000);
});
