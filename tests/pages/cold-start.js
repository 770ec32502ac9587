// A page's cold start as an app's does it (tests/e2e/cold-start.spec.ts):
// import siltdb, connect(name), one get; with a record of what it took on
// the way, for the test to check that the first request waited on nothing
// but the database's opening. Before siltdb loads, the page's Worker is
// wrapped to log every message each way (what a request waited on shows
// there: a message the page sent and the worker answered first), and the
// files fetched are read from the resource timeline after.
// ?name= the database; #fill=N writes keys 0..N-1 after the read (a first
// visit). Leaves window.result, and document.body.dataset.state 'done' or
// 'error' (window.failure).
const log = [];
const kind = (m) => {
  if (Array.isArray(m)) return m.map(kind).join(',');
  if (m === null || typeof m !== 'object') return typeof m;
  if ('t' in m) return m.t;
  if ('request' in m) return m.request?.op ?? 'request';
  if ('gets' in m) return 'gets';
  if ('ids' in m) return 'answers';
  if ('ok' in m) return m.ok ? 'answer' : 'error';
  return 'object';
};
const Base = window.Worker;
window.Worker = class extends Base {
  constructor(...args) {
    super(...args);
    log.push(`start ${String(args[0]).replace(/^.*\//, '')}`);
    this.addEventListener('message', (e) => log.push(`in ${Array.isArray(e.data) && typeof e.data[0] === 'number' ? 'answer' : kind(e.data)}`));
  }
  postMessage(m, t) {
    log.push(`out ${kind(m)}`);
    return super.postMessage(m, t);
  }
};

const q = new URLSearchParams(location.search);
const fill = Number(new URLSearchParams(location.hash.slice(1)).get('fill') ?? 0);

(async () => {
  const { connect } = await import('/siltdb/dist/index.js');
  const db = await connect(q.get('name'), { valueEncoding: 'utf8' });
  const value = await db.get('k0');
  const before = log.slice();
  const files = performance
    .getEntriesByType('resource')
    .map((e) => new URL(e.name).pathname)
    .filter((p) => p.startsWith('/siltdb/'));
  for (let i = 0; i < fill; i++) await db.put(`k${i}`, `v${i}`);
  window.result = { value, log: before, files };
  document.body.dataset.state = 'done';
})().catch((e) => {
  window.failure = String(e?.stack ?? e);
  document.body.dataset.state = 'error';
});
