// abstract-level 3's own has and hasMany tests (Level/abstract-level,
// test/has-test.js and test/has-many-test.js, run with tape) against siltdb
// through the thin adapter of abstract-level/adapter.ts, one body run
// against a worker's `Database` (`open()` on the fake OPFS and Web Locks of
// fakes.ts) and against `connect()`'s `RemoteDatabase` (the real client and
// leader in the simulated browser of tabs-harness.ts). A tape assertion
// that fails fails the test, and is listed.
import { afterEach, describe, expect, test } from 'vitest';
import { openOn } from '../src/local/open.js';
import type { RemoteDatabase } from '../src/tabs/remote-database.js';
import { type SiltHandle, SiltLevel } from './abstract-level/adapter.js';
import { type Factory, runHasSuite } from './abstract-level/suite.js';
import { FakeDirectory, FakeLocks } from './fakes.js';
import { Origin } from './tabs-harness.js';

/** A factory of databases for the suite, and what lets go of all of them (the suite leaves some open). */
interface Target {
  factory: Factory;
  dispose(): Promise<void>;
}

let target: Target | undefined;
afterEach(async () => {
  await target?.dispose();
  target = undefined;
});

/** Each database on an OPFS of its own: a reopen after a close finds the same data. */
async function worker(): Promise<Target> {
  const made: SiltLevel[] = [];
  return {
    factory: (options) => {
      const env = { root: new FakeDirectory(), locks: new FakeLocks() };
      const db = new SiltLevel((o) => openOn(env, 'abstract-level', o), options);
      made.push(db);
      return db;
    },
    dispose: async () => {
      await Promise.all(made.map((db) => db.close()));
    },
  };
}

/** Runs the simulated browser until `p` settles. */
async function settled<T>(o: Origin, p: Promise<T>): Promise<T> {
  const r = await o.world.until(p);
  if (r === undefined) throw new Error('still pending when the simulated browser had nothing left to do');
  if (!r.ok) throw r.error;
  return r.value;
}

/** `db`, each of whose Promises runs the simulated browser until it settles. */
function driven(o: Origin, db: RemoteDatabase): SiltHandle {
  return new Proxy(db, {
    get(target, name) {
      const v: unknown = Reflect.get(target, name);
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        const r: unknown = v.apply(target, args);
        return r instanceof Promise ? settled(o, r) : r;
      };
    },
  });
}

/**
 * Each database a sublevel of its own of one shared database, through a
 * `connect()` of one tab per open (a close lets go of that handle only: a
 * first connection, held to the end, keeps the tab's connection, and so
 * the data, for a reopen).
 */
async function remote(): Promise<Target> {
  const o = await Origin.create(1, 'fifo');
  const tab = o.tab('A');
  const held = await settled(o, o.connect(tab));
  const made: SiltLevel[] = [];
  return {
    factory: (options) => {
      const name = `level${made.length}`;
      const db = new SiltLevel(async () => driven(o, (await settled(o, o.connect(tab))).sublevel(name)), options);
      made.push(db);
      return db;
    },
    dispose: async () => {
      await Promise.all(made.map((db) => db.close()));
      await settled(o, held.close());
      await o.dispose();
    },
  };
}

const targets: [string, () => Promise<Target>][] = [
  ['open() in a worker', worker],
  ['connect()', remote],
];

describe.each(targets)('abstract-level has/hasMany suite over %s', (_, make) => {
  test('every assertion passes', async () => {
    target = await make();
    const report = await runHasSuite(target.factory);
    expect(report.failures).toEqual([]);
    // The tests ran (the manifest declares has: true), on the database and on a sublevel of it.
    for (const name of ['simple has()', 'simultaneous has()', 'simple hasMany()', 'simultaneous hasMany()', 'hasMany() on reopened db']) {
      expect(report.tests.filter((t) => t === name)).toHaveLength(2);
    }
    expect(report.passed).toBeGreaterThan(100);
  }, 60_000);
});
