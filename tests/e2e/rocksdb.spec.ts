// RocksDB tables to and from Chromium: an export in the RocksDB form,
// written by a worker's open() and by a page through connect(), passes
// RocksDB's own sst_dump and ldb (Debian's rocksdb-tools, from
// scripts/setup.sh) and loads into a RocksDB whose scan is the browser's;
// tables ldb writes go into a new database with importDatabase and
// into an open one with ingestRocksdb.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test, type Page } from '@playwright/test';
import { openHarness, runFresh } from './harness.js';

type Lib = typeof import('../../js/src/index.js');
declare global {
  interface Window {
    lib: Lib;
  }
}

/** Runs one of RocksDB's tools; fails on a non-zero exit or a problem it reports on stderr (sst_dump exits 0 on checksum errors). */
function tool(args: string[], input?: string): string {
  const r = spawnSync(`/usr/bin/${args[0]}`, args.slice(1), { input, encoding: 'utf8' });
  if (r.error) throw new Error(`${args[0]} is missing (run scripts/setup.sh: it installs Debian's rocksdb-tools): ${r.error.message}`);
  const out = `${r.stdout}${r.stderr}`;
  expect(r.status, `${args.join(' ')}: ${out}`).toBe(0);
  expect(out, args.join(' ')).not.toMatch(/Corruption|mismatch|Invalid argument/);
  return out;
}

/** The archive unpacked, checked by sst_dump and ingested by ldb into a new RocksDB; its scan as [hex key, hex value]. */
function intoRocksdb(tar: Uint8Array): [string, string][] {
  const dir = mkdtempSync(join(tmpdir(), 'silt-rocksdb-'));
  try {
    writeFileSync(join(dir, 'export.tar'), tar);
    const untar = spawnSync('tar', ['-xf', join(dir, 'export.tar'), '-C', dir]);
    expect(untar.status).toBe(0);
    const tables = readdirSync(dir)
      .filter((f) => f.endsWith('.sst'))
      .sort();
    expect(tables.length).toBeGreaterThan(0);
    for (const t of tables) {
      tool(['sst_dump', `--file=${join(dir, t)}`, '--command=check', '--verify_checksum']);
      expect(tool(['ldb', `--db=${join(dir, 'db')}`, '--create_if_missing', 'ingest_extern_sst', join(dir, t)])).toContain('ingested');
    }
    return tool(['ldb', `--db=${join(dir, 'db')}`, 'scan', '--hex'])
      .split('\n')
      .filter((l) => l.startsWith('0x'))
      .map((l) => {
        const [k, v] = l.split(' : ');
        return [k!.slice(2).toLowerCase(), v!.slice(2).toLowerCase()];
      });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A table written by RocksDB's SstFileWriter (ldb write_extern_sst, LZ4) of `entries`. */
function rocksdbTable(entries: [string, string][]): Uint8Array {
  const dir = mkdtempSync(join(tmpdir(), 'silt-rocksdb-'));
  try {
    const input = entries.map(([k, v]) => `${k} ==> ${v}\n`).join('');
    tool(['ldb', `--db=${join(dir, 'scratch')}`, '--create_if_missing', '--compression_type=lz4', 'write_extern_sst', join(dir, 't.sst')], input);
    return new Uint8Array(readFileSync(join(dir, 't.sst')));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const hex = (s: string) => Buffer.from(s).toString('hex');

test("a worker's export in the RocksDB form loads into RocksDB as Chromium reads it, and back through importDatabase", async ({ page }) => {
  await openHarness(page);
  const r = await runFresh<{ tar: number[]; scan: [string, string][] }>(page, 'rocksdbExport', { name: 'rocksdb-src', n: 5000 });
  expect(r.scan.length).toBeGreaterThan(3000);
  expect(intoRocksdb(Uint8Array.from(r.tar))).toEqual(r.scan);
  const back = await runFresh<{ report: { keys: number; tables: number }; scan: [string, string][] }>(page, 'rocksdbImport', {
    name: 'rocksdb-copy',
    bytes: r.tar,
  });
  expect(back.report.keys).toBe(r.scan.length);
  expect(back.report.tables).toBeGreaterThan(1);
  expect(back.scan).toEqual(r.scan);
  // A table RocksDB wrote makes a database of its own.
  const table = rocksdbTable([
    ['alpha', 'one'],
    ['beta', 'two'],
  ]);
  const own = await runFresh<{ report: { keys: number; tables: number }; scan: [string, string][] }>(page, 'rocksdbImport', {
    name: 'rocksdb-own',
    bytes: Array.from(table),
  });
  expect(own).toEqual({
    report: { keys: 2, tables: 1 },
    scan: [
      [hex('alpha'), hex('one')],
      [hex('beta'), hex('two')],
    ],
  });
  // And into an open database: its keys win over the database's.
  const into = await runFresh<{ report: { keys: number; tables: number }; scan: [string, string][] }>(page, 'rocksdbIngest', {
    name: 'rocksdb-into',
    bytes: Array.from(table),
  });
  expect(into).toEqual({
    report: { keys: 2, tables: 1 },
    scan: [
      [hex('alpha'), hex('one')],
      [hex('beta'), hex('two')],
      [hex('gamma'), hex('mine')],
    ],
  });
});

async function loadLib(page: Page): Promise<void> {
  await openHarness(page);
  await page.evaluate(async () => {
    window.lib = (await import('/siltdb/dist/index.js' as string)) as Lib;
  });
}

test('through connect(): an export in the RocksDB form loads into RocksDB as the page reads it, and a table RocksDB wrote goes in', async ({ page }) => {
  await loadLib(page);
  const table = rocksdbTable([
    ['k00001', 'from rocksdb'],
    ['zz', 'new'],
  ]);
  const r = await page.evaluate(async (table) => {
    const { connect } = window.lib;
    const hexOf = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
    const db = await connect<string, string>('rocksdb-remote', { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    try {
      const b = db.batch();
      for (let i = 0; i < 2000; i++) b.put(`k${String(i).padStart(5, '0')}`, `v${i}`);
      await db.write(b);
      await db.delete('k00002');
      const tar = new Uint8Array(await new Response(db.export({ form: 'rocksdb' })).arrayBuffer());
      const scan: [string, string][] = [];
      for await (const [k, v] of db.iterator()) scan.push([hexOf(new TextEncoder().encode(k)), hexOf(new TextEncoder().encode(v))]);
      // A table RocksDB wrote, as a File the page was given: its keys win.
      const report = await db.ingestRocksdb(new File([new Uint8Array(table)], 'table.sst'));
      const after = [await db.get('k00001'), await db.get('zz'), await db.get('k00003'), await db.count()];
      return { tar: Array.from(tar), scan, report, after };
    } finally {
      await db.close();
    }
  }, Array.from(table));
  expect(r.scan.length).toBe(1999);
  expect(intoRocksdb(Uint8Array.from(r.tar))).toEqual(r.scan);
  expect(r.report).toEqual({ keys: 2, tables: 1 });
  expect(r.after).toEqual(['from rocksdb', 'new', 'v3', 2000]);
});
