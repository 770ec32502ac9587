// Runs the has and hasMany tests of abstract-level's own suite (its
// test/has-test.js and test/has-many-test.js, for tape) in a tape harness
// of their own, and reports every assertion, so that a vitest test can
// fail on them. The files are added as abstract-level's test/index.js adds
// them: after the factory and manifest tests (which check the factory and
// record `supports`), then all of it again on a sublevel of each database.

import { createRequire } from 'node:module';
import { inspect } from 'node:util';
import type { AbstractSublevelOptions } from 'abstract-level';
import tape from 'tape';
import type { SiltLevel } from './adapter.js';

// The suite's files are CommonJS without type declarations: required, and
// typed here as far as they are used.
const require = createRequire(import.meta.url);

/** Makes a new, empty database for each call (the suite's `factory`). */
export type Factory = (options?: ConstructorParameters<typeof SiltLevel>[1]) => SiltLevel;

/** What abstract-level's test/common.js makes of `{ test, factory }`. */
type TestCommon = object;
type Register = (test: tape.Harness, common: TestCommon) => void;

const suite = {
  common: require('abstract-level/test/common.js') as (options: { test: tape.Harness; factory: (options?: object) => unknown }) => TestCommon,
  factory: require('abstract-level/test/factory-test.js') as Register,
  manifest: require('abstract-level/test/manifest-test.js') as Register,
  has: (require('abstract-level/test/has-test.js') as { all: Register }).all,
  hasMany: (require('abstract-level/test/has-many-test.js') as { all: Register }).all,
};

/** A tape assertion that failed: in which test, what it asserted, what it expected and what it got, where. */
export interface Failure {
  test: string;
  assertion: string;
  operator: string;
  expected: string;
  actual: string;
  /** Where in abstract-level's test files. */
  at: string;
}

export interface Report {
  /** The names of the tape tests that ran, in order. */
  tests: string[];
  /** How many assertions passed. */
  passed: number;
  failures: Failure[];
}

/** One object of tape's object-mode stream. */
type Row =
  | { type: 'test'; id: number; name: string }
  | { type: 'assert'; test: number; ok: boolean; name?: string; operator?: string; expected?: unknown; actual?: unknown; at?: string }
  | { type: 'end'; test: number };

const shown = (v: unknown) => inspect(v, { depth: 4, breakLength: Number.POSITIVE_INFINITY });

/** Runs abstract-level's has and hasMany tests against databases of `factory`, to the end. */
export function runHasSuite(factory: Factory): Promise<Report> {
  const test = tape.createHarness();
  // Before the tests are added: the object stream reports only tests added after it.
  const stream = test.createStream({ objectMode: true });
  const report: Report = { tests: [], passed: 0, failures: [] };
  const names = new Map<number, string>();
  stream.on('data', (row: Row) => {
    if (row.type === 'test') {
      names.set(row.id, row.name);
      report.tests.push(row.name);
    } else if (row.type === 'assert') {
      if (row.ok) report.passed++;
      else
        report.failures.push({
          test: names.get(row.test) ?? `test ${row.test}`,
          assertion: row.name ?? '',
          operator: row.operator ?? '',
          expected: shown(row.expected),
          actual: shown(row.actual),
          at: row.at ?? '',
        });
    }
  });
  const ended = new Promise<Report>((resolve) => stream.on('end', () => resolve(report)));
  for (const make of [factory, (options?: AbstractSublevelOptions<string, string>) => factory().sublevel('test', options ?? {})]) {
    const common = suite.common({ test, factory: make });
    suite.factory(test, common);
    suite.manifest(test, common);
    suite.has(test, common);
    suite.hasMany(test, common);
  }
  return ended;
}
