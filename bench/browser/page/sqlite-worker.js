// SQLite-wasm for a page (bench/run/page.mjs): @sqlite.org/sqlite-wasm on
// opfs-sahpool in this dedicated worker, set up as the suite's adapter does
// (bench/browser/engines/sqlite.js: the VFS, the pragmas, the table
// kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID, its prepared statements),
// behind the minimal layer of rpc.js. Each call is what an app would write
// with SQLite's oo1 API: bind, step, read the column (`get(0)`: a copy of
// the blob out of wasm memory), reset; the value goes back to the page
// (cloned by postMessage). Several databases may be open, one per config
// of the adapter: 'exclusive' (the suite's pragmas, 64 MiB cache and
// synchronous OFF, with locking_mode EXCLUSIVE, which keeps the rollback
// journal between commits: without it every autocommit put creates and
// deletes the journal, and opfs-sahpool flushes its pool's header at both)
// and 'defaults' (no pragma). Keys are the page's strings, bound as text.
import adapter from '../engines/sqlite.js';
import { keyTextOf, valueFor } from '../common.js';

const open = {};

const ops = {
  async open(config, name) {
    const engine = adapter.withConfig(config);
    open[config] = await engine.open(name);
    const { version, vfs, schema, pragmas, journal_mode, page_size, locking_mode } = engine.options;
    return { version, vfs, schema, pragmas, journal_mode, page_size, locking_mode };
  },
  get(config, key) {
    const s = open[config].get;
    s.bind(1, key);
    const v = s.step() ? s.get(0) : undefined;
    s.reset();
    return v;
  },
  put(config, key, value) {
    open[config].put.bind([key, value]).stepReset();
    return 0;
  },
  scan(config, key, n) {
    const s = open[config].scan.bind([key, n]);
    const out = [];
    while (s.step()) out.push([s.get(0), s.get(1)]);
    s.reset();
    return out;
  },
  fill(config, n) {
    const { db, put } = open[config];
    for (let b = 0; b < n; b += 1000) {
      db.transaction(() => {
        for (let i = b; i < Math.min(n, b + 1000); i++) put.bind([keyTextOf(i), valueFor(i)]).stepReset();
      });
    }
    return 0;
  },
};

self.onmessage = async ({ data: [op, ...args] }) => {
  try {
    self.postMessage(await ops[op](...args));
  } catch (e) {
    self.postMessage({ error: `SQLite ${op}: ${e?.message ?? e}` });
  }
};
