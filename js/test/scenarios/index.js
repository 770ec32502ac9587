// The scenario suite both APIs share: every scenario of the API, written
// once with `await` on every call (scenario.js), run against `open()` and
// against `connect()`, each on a database and again on a sublevel of one:
// in vitest by js/test/scenarios.test.ts (the worker's `Database` on an
// in-memory database, and `connect()` in the simulated browser of
// tabs-harness.ts), in Chromium by tests/e2e/scenarios.spec.ts and in
// Firefox by tests/firefox/run.mjs (`open()` on OPFS in a dedicated
// worker, `connect()` on a page; tests/pages/shared-scenarios.js). What only
// one API has is tested on its own: the worker's synchronous calls,
// getPinned and pinned views in js/test/{api,reads,scans,...}.test.ts;
// connect()'s failover, frozen pages and leader changes in js/test/tabs-*.test.ts
// and tests/e2e/tabs.spec.ts.
import backups from './backups.js';
import batches from './batches.js';
import counts from './counts.js';
import errors from './errors.js';
import has from './has.js';
import ingest from './ingest.js';
import iterators from './iterators.js';
import levels from './levels.js';
import live from './live.js';
import merges from './merges.js';
import reads from './reads.js';
import snapshots from './snapshots.js';
import transactions from './transactions.js';
import watch from './watch.js';
import writes from './writes.js';

/** @type {[string, import('./scenario.js').Scenario[]][]} Each file's scenarios, by the file's name. */
export const suites = [
  ['reads', reads],
  ['writes', writes],
  ['batches', batches],
  ['has', has],
  ['snapshots', snapshots],
  ['iterators', iterators],
  ['counts', counts],
  ['levels', levels],
  ['transactions', transactions],
  ['merges', merges],
  ['ingest', ingest],
  ['backups', backups],
  ['watch', watch],
  ['live', live],
  ['errors', errors],
];
