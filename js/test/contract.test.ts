// The contract between the wasm module and this package
// (crates/wasm/src/contract.rs, js/src/boundary/contract.ts): what the TypeScript
// names (error codes, recoveries, the fields of every report) must be
// exactly what the module says, so that neither side can change alone.
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, test } from 'vitest';
import { contract, RECOVERIES } from '../src/boundary/contract.js';
import { REPORT_FIELDS, type ReportName } from '../src/boundary/report-fields.js';
import { BATCH_TAGS } from '../src/core/batch.js';
import { BINDING_ERROR_CODES, ENGINE_ERROR_CODES, PACKAGE_ERROR_CODES, SILT_ERROR_CODES } from '../src/core/errors.js';
import { openMemory } from '../src/index.js';
import { importDatabaseOn, MIN_POOL_RESERVE, openOn } from '../src/local/open.js';
import { repairOn } from '../src/local/repair.js';
import { loadWasm } from '../src/boundary/wasm.js';
import { FakeDirectory, FakeLocks } from './fakes.js';
import { bytes } from './helpers.js';

beforeAll(loadWasm);

describe('the contract with the wasm module', () => {
  test("the error-code union is exactly the engine's and the binding's codes, plus the package's own", () => {
    expect(contract().errorCodes).toEqual([...ENGINE_ERROR_CODES, ...BINDING_ERROR_CODES]);
    for (const code of PACKAGE_ERROR_CODES) expect(contract().errorCodes).not.toContain(code);
    expect(new Set(SILT_ERROR_CODES).size).toBe(SILT_ERROR_CODES.length);
  });

  test("the recoveries are exactly the engine's", () => {
    expect(contract().recoveries).toEqual([...RECOVERIES]);
  });

  test('the exchange layout has every offset this package reads, and a request starts after the release slots', () => {
    const x = contract().exchange;
    expect(Object.keys(x).sort()).toEqual(['absent', 'handles', 'out0', 'out1', 'releaseSlots', 'releases', 'request']);
    for (const v of Object.values(x)) expect(Number.isInteger(v) && v >= 0).toBe(true);
    expect(x.request).toBe(x.handles + 4 * x.releaseSlots);
    // Header words are distinct and 4-aligned.
    const words = [x.releases, x.out0, x.out1];
    expect(new Set(words).size).toBe(3);
    for (const w of [...words, x.handles]) expect(w % 4).toBe(0);
    expect(x.absent).toBe(0xffff_ffff);
  });

  test('the background-work bits are distinct single bits', () => {
    const w = contract().work;
    expect(Object.keys(w).sort()).toEqual(['didWork', 'waitingForPool', 'workLeft']);
    const bits = Object.values(w);
    for (const b of bits) expect(b > 0 && (b & (b - 1)) === 0).toBe(true);
    expect(new Set(bits).size).toBe(bits.length);
  });

  test('the smallest poolReserve is what the busiest call needs free', () => {
    const needs = contract().poolNeeds;
    expect(Object.keys(needs).sort()).toEqual(['background', 'open', 'write']);
    expect(MIN_POOL_RESERVE).toBe(Math.max(...Object.values(needs)));
  });
});

const REPORTS = Object.keys(REPORT_FIELDS) as ReportName[];

/** Fails unless `object` has every field `report` requires and (unless `more`) no field it does not list. */
function expectShape(report: ReportName, object: object, { more = false } = {}): void {
  const fields: readonly string[] = REPORT_FIELDS[report];
  const keys = Object.keys(object);
  const lacking = fields.filter((f) => !f.endsWith('?') && !keys.includes(f));
  const unlisted = more ? [] : keys.filter((k) => !fields.includes(k) && !fields.includes(`${k}?`));
  expect({ lacking, unlisted }, report).toEqual({ lacking: [], unlisted: [] });
}

describe('the reports the module builds (crates/wasm/src/contract.rs)', () => {
  test('are the ones this package lists', () => {
    expect(Object.keys(contract().reports).sort()).toEqual([...REPORTS].sort());
  });

  test.each(REPORTS)("%s: the module's fields are exactly its TypeScript type's, each marked `?` on both sides or neither", (report) => {
    expect([...(contract().reports[report] ?? [])].sort()).toEqual([...REPORT_FIELDS[report]].sort());
  });

  test('every object a call returns has the fields its type requires, and an optional one only where it says', async () => {
    const root = new FakeDirectory();
    const locks = new FakeLocks();
    // A size cap: the pool reports maxBytes and reserveBytes.
    const db = await openOn({ root, locks }, 'shapes', { maxBytes: 4 << 20 });
    expectShape('ingest', await db.ingest(['a', 'b'].map((k) => [k, bytes(k)] as const)));
    expectShape('verify', db.verify());
    const stats = db.statistics();
    // siltdb adds fields of its own to the module's.
    expectShape('statistics', stats, { more: true });
    expectShape('pool', stats.pool!);
    expect(Object.keys(stats.pool!)).toEqual(expect.arrayContaining(['maxBytes', 'reserveBytes']));
    expect(Object.keys(stats.histograms).length).toBeGreaterThan(0);
    for (const h of Object.values(stats.histograms)) expectShape('histogram', h);
    const backup: Uint8Array[] = [];
    for await (const chunk of db.export() as unknown as AsyncIterable<Uint8Array>) backup.push(chunk);
    db.close();
    expectShape('import', await importDatabaseOn({ root, locks }, 'copy', backup, {}));
    expectShape('repair', await repairOn({ root, locks }, 'shapes'));
    // No cap: no maxBytes, no reserveBytes.
    const uncapped = await openOn({ root, locks }, 'shapes', {});
    const pool = Object.keys(uncapped.statistics().pool!);
    expect(pool).not.toContain('maxBytes');
    expect(pool).not.toContain('reserveBytes');
    uncapped.close();
    // In memory: no pool.
    const memory = await openMemory();
    expect(Object.keys(memory.statistics())).not.toContain('pool');
    memory.close();
  });
});

describe('the batch encoding', () => {
  test("the tags of a batch's updates are the wasm module's (crates/wasm/src/batch.rs)", () => {
    const rust = readFileSync(new URL('../../crates/wasm/src/batch.rs', import.meta.url), 'utf8');
    const consts = Object.fromEntries([...rust.matchAll(/^const ([A-Z_]+): u8 = (0x[0-9a-f]+);$/gm)].map((m) => [m[1], Number(m[2])]));
    expect(consts).toEqual({
      DELETE: BATCH_TAGS.delete,
      PUT: BATCH_TAGS.put,
      MERGE: BATCH_TAGS.merge,
      DELETE_RANGE: BATCH_TAGS.deleteRange,
      BOOKKEEPING_PUT: BATCH_TAGS.bookkeepingPut,
    });
  });
});

describe('the shipped module', () => {
  test('exports no test entry point (the fs contract runner is in the test-only build)', () => {
    const wasm = readFileSync(new URL('../pkg/silt_wasm_bg.wasm', import.meta.url));
    const names = WebAssembly.Module.exports(new WebAssembly.Module(wasm)).map((e) => e.name);
    // The check reads the real export list: the product's own entry points are in it.
    expect(names).toEqual(expect.arrayContaining(['contract', 'opfspool_add', 'database_getPinned']));
    expect(names.filter((n) => /runfscontract|fuzz|testkit/i.test(n))).toEqual([]);
    const glue = readFileSync(new URL('../pkg/silt_wasm.d.ts', import.meta.url), 'utf8');
    expect(glue).not.toMatch(/runFsContract/);
  });
});
