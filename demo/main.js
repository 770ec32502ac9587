// The demo page: connect('demo') shares the database with every other tab
// that shows this page: one tab's worker has it open on OPFS and answers
// every call below (each a Promise), whichever tab makes it.
import { connect, removeDatabase, WriteBatch, SiltError } from '/siltdb/dist/index.js';

const $ = (id) => document.getElementById(id);
const enc = new TextEncoder();
const dec = new TextDecoder();
const fmt = (n) => Number(n).toLocaleString('en-US');
const COUNT_KEY = 'demo:count';

/** Deterministic records: the same i always gives the same key and value. */
const keyOf = (i) => `user:${String(i).padStart(8, '0')}`;
function valueFor(i) {
  let x = (i + 1) * 2654435761;
  x ^= x << 13;
  x ^= x >>> 17;
  x ^= x << 5;
  return JSON.stringify({ id: i, name: `user ${i}`, score: (x >>> 0) % 100_000 });
}

let db;
let records = 0;

function showError(e) {
  document.body.dataset.state = 'error';
  $('error').hidden = false;
  $('error').textContent = e instanceof SiltError ? `${e.code}: ${e.message}` : String(e?.message ?? e);
}

function enable(on) {
  for (const b of document.querySelectorAll('button, input[type=file]')) b.disabled = !on;
}

function rows(tbody, pairs) {
  tbody.replaceChildren(
    ...pairs.map(([k, v]) => {
      const tr = document.createElement('tr');
      for (const cell of [k, v]) {
        const td = document.createElement('td');
        td.textContent = cell;
        tr.append(td);
      }
      return tr;
    }),
  );
}

async function readCount() {
  const v = await db.get(COUNT_KEY);
  return v === undefined ? 0 : Number(dec.decode(v));
}

async function load(n) {
  enable(false);
  document.body.dataset.state = 'loading-records';
  const t0 = performance.now();
  const chunk = 1000;
  for (let from = 0; from < n; from += chunk) {
    const batch = new WriteBatch();
    for (let i = from; i < Math.min(n, from + chunk); i++) batch.put(keyOf(i), enc.encode(valueFor(i)));
    await db.write(batch);
    $('progress').value = Math.min(n, from + chunk) / n;
    $('load-status').textContent = `${fmt(Math.min(n, from + chunk))} of ${fmt(n)} records`;
  }
  records = Math.max(records, n);
  await db.put(COUNT_KEY, enc.encode(String(records)), { sync: true });
  const ms = performance.now() - t0;
  $('load-status').textContent = `${fmt(n)} records in ${ms.toFixed(0)} ms (${fmt(Math.round((n * 1000) / ms))} records/s)`;
  enable(true);
  document.body.dataset.state = 'loaded';
}

async function get(key) {
  const v = await db.get(key);
  $('get-result').textContent = v === undefined ? '(no such key)' : dec.decode(v);
}

async function multiGet(n) {
  const keys = Array.from({ length: n }, () => keyOf(Math.floor(Math.random() * Math.max(1, records))));
  const t0 = performance.now();
  const values = await db.multiGet(keys); // a MultiGetResult
  const ms = performance.now() - t0;
  try {
    const found = [...values].filter((v) => v !== undefined).length;
    const shown = Math.min(n, 8);
    $('multiget-summary').textContent = `${found} of ${n} found in ${ms.toFixed(1)} ms${shown < n ? ` (first ${shown} shown)` : ''}`;
    rows(
      $('multiget').tBodies[0],
      keys.slice(0, shown).map((k, i) => [k, values.text(i) ?? '(missing)']),
    );
  } finally {
    values.release();
  }
}

async function scan(from, limit, reverse) {
  const out = [];
  const it = db.iterator(reverse ? { lte: from, reverse: true } : { gte: from, lt: 'user;' });
  for await (const [k, v] of it) {
    const key = dec.decode(k);
    if (!key.startsWith('user:')) continue;
    out.push([key, dec.decode(v)]);
    if (out.length >= limit) break;
  }
  rows($('scan').tBodies[0], out);
}

async function refreshStats() {
  if (!db) return;
  const s = await db.statistics();
  const t = s.tickers;
  $('stat-records').textContent = fmt(records);
  $('stat-levels').textContent = s.properties.filesPerLevel.map((n, l) => `L${l}: ${n}`).join('  ');
  $('stat-table-bytes').textContent = `${fmt(s.properties.tableBytes)} B`;
  $('stat-memtable').textContent = `${fmt(s.properties.memtableBytes)} B`;
  $('stat-cache').textContent = `${fmt(t['rocksdb.block.cache.hit'] ?? 0)} / ${fmt(t['rocksdb.block.cache.miss'] ?? 0)}`;
  $('stat-bloom').textContent = `${fmt(t['rocksdb.bloom.filter.useful'] ?? 0)} / ${fmt(t['rocksdb.bloom.filter.full.positive'] ?? 0)}`;
  $('stat-bg').textContent = `${fmt(t['silt.flushes'] ?? 0)} / ${fmt(t['silt.compactions'] ?? 0)}`;
  $('stat-pool').textContent = s.pool ? `${fmt(s.pool.files)} (${fmt(s.pool.free)} free)` : '–';
  $('stat-memory').textContent = `${fmt(s.memory.bytes)} B, ${s.memory.mode} views`;
}

// Notes from every tab: added here or in another tab, shown as watch() reports them.
const tabId = Math.random().toString(36).slice(2, 6);
const NOTES = { gte: 'note:', lt: 'note;' };

function showRole() {
  if (!db) return;
  $('tab-role').textContent = db.isLeader
    ? `This tab (${tabId}) leads: its worker has the database open and serves every tab.`
    : `Another tab leads; this tab (${tabId}) sends its requests there.`;
  $('tab-role').dataset.leader = String(db.isLeader);
}

let notesPending = false;
/** The ten newest notes (read again after each change; changes come in bursts). */
async function refreshNotes() {
  if (notesPending) return;
  notesPending = true;
  await new Promise((r) => setTimeout(r, 0));
  notesPending = false;
  const notes = [];
  for await (const [, v] of db.iterator({ ...NOTES, reverse: true, batchSize: 10 })) {
    notes.push(JSON.parse(dec.decode(v)));
    if (notes.length === 10) break;
  }
  $('notes').replaceChildren(
    ...notes.map((n) => {
      const li = document.createElement('li');
      li.textContent = `${n.text} (tab ${n.tab}${n.tab === tabId ? ', this one' : ''}, ${new Date(n.at).toLocaleTimeString('en-GB')})`;
      return li;
    }),
  );
}

async function addNote(text) {
  const at = Date.now();
  await db.put(`note:${String(at).padStart(15, '0')}:${tabId}`, enc.encode(JSON.stringify({ text, tab: tabId, at })));
}

function on(form, handler) {
  $(form).addEventListener('submit', (event) => {
    event.preventDefault();
    handler().catch(showError);
  });
}

on('load-form', () => load(Number($('records').value)));
on('note-form', () => addNote($('note-text').value));
on('get-form', () => get($('get-key').value));
on('multiget-form', () => multiGet(Number($('multiget-n').value)));
on('scan-form', () => scan($('scan-from').value, Number($('scan-limit').value), $('scan-reverse').checked));
function button(id, handler) {
  $(id).addEventListener('click', () => {
    enable(false);
    handler()
      .then(refreshStats)
      .then(() => enable(true), showError);
  });
}
button('flush', () => db.flush());
button('compact', () => db.compactRange());

// A backup: db.export() streamed into a Blob, saved as a file. Restoring:
// the file imported into a new, empty database "demo" (checked chunk by
// chunk; a damaged file leaves the database empty), then a reload.
button('backup', async () => {
  const t0 = performance.now();
  const blob = await new Response(db.export()).blob();
  const link = $('backup-link');
  URL.revokeObjectURL(link.href);
  link.href = URL.createObjectURL(blob);
  link.click();
  $('load-status').textContent = `Backup of ${fmt(blob.size)} bytes made in ${fmt(Math.round(performance.now() - t0))} ms`;
});

$('restore').addEventListener('change', async () => {
  const file = $('restore').files?.[0];
  if (!file) return;
  try {
    enable(false);
    await db.close();
    db = undefined;
    await removeDatabase('demo');
    db = await connect('demo');
    await db.import(file);
    // Keys, not the report's entries: a backup of the whole database holds
    // its table files, whose entries count overwritten versions too.
    sessionStorage.setItem('restored', `Restored ${fmt(await db.count())} keys from ${file.name}.`);
    await db.close();
    location.reload();
  } catch (e) {
    showError(e);
  }
});

$('reset').addEventListener('click', async () => {
  try {
    enable(false);
    await db.close();
    db = undefined;
    await removeDatabase('demo');
    location.reload();
  } catch (e) {
    showError(e);
  }
});

try {
  // A reload's previous page may hold the database's lock for a moment
  // while it is torn down: wait up to five seconds rather than fail.
  db = await connect('demo', { wait: true, signal: AbortSignal.timeout(5_000) });
  records = await readCount();
  $('opened').textContent =
    records > 0 ? `Opened the database "demo": it holds ${fmt(records)} records from an earlier visit.` : 'Opened a new, empty database "demo".';
  if (records > 0) $('opened').classList.add('survived');
  const restored = sessionStorage.getItem('restored');
  if (restored) {
    sessionStorage.removeItem('restored');
    $('opened').textContent += ` ${restored}`;
  }
  showRole();
  setInterval(showRole, 500);
  db.watch(NOTES, (change) => {
    $('notes-seen').textContent =
      `Last change seen: #${change.kind === 'gap' ? `${change.from}–${change.to} (missed; read again)` : `${change.seq}, a ${change.kind}`}`;
    refreshNotes().catch(showError);
  });
  await refreshNotes();
  enable(true);
  document.body.dataset.state = 'ready';
  setInterval(() => refreshStats().catch(() => {}), 500);
  await refreshStats();
  // ?load=N loads N records at once (the browser tests use it).
  const preset = new URLSearchParams(location.search).get('load');
  if (preset) {
    history.replaceState(null, '', location.pathname); // a reload shows what survived, without loading again
    $('records').value = preset;
    await load(Number(preset));
    await Promise.all([get($('get-key').value), multiGet(8), scan($('scan-from').value, 8, false)]);
    await refreshStats();
    document.body.dataset.state = 'answered';
  }
} catch (e) {
  showError(e);
}
