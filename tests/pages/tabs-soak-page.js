// One tab of the many-tab soak (tests/tabs-soak.mjs drives it; issue 40,
// item 4): a connect() connection to the soak's database and mixed work on
// the tab's own keys, each kind checked against what the tab knows it was
// told:
// - writes: `log/<tab>/<n>` with `last/<tab>` in one batch, up to four in
//   flight, and now and then a range delete of all but the last thousand
//   or so (every acknowledged write there once, the log one run of
//   numbers that starts at the floor a range delete left, so that the
//   data, and the files, stay bounded however long the soak runs);
// - transactions: `ctr/<tab>` read and incremented (its value at least the
//   commits acknowledged, at most those attempted);
// - merges (u64add): `sum/<tab>` (the same bounds);
// - range deletes: `tmp/<tab>/*` put, then cleared: none left once
//   the clear is acknowledged;
// - scans of its own log (a prefix holding every write acknowledged
//   before the scan began), reads of `last/<tab>`, snapshots;
// - a watch of its own log: no change twice, none out of order.
// A write may fail only as its own tab goes; a transaction or merge may
// also fail with LeaderChanged (not known whether it was applied).
//
//   await import('/test-pages/tabs-soak-page.js');
//   await window.soak.start({ name, id, seed });
//   window.soak.state(); await window.soak.stop();

const lib = await import('/siltdb/dist/index.js');
const { schedule } = await import('/test-pages/schedule.js');
const enc = new TextEncoder();
const dec = new TextDecoder();

const u64 = (n) => {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt(n), true);
  return b;
};
const fromU64 = (b) => (b === undefined ? 0 : Number(new DataView(b.buffer, b.byteOffset, 8).getBigUint64(0, true)));
const pad = (n) => String(n).padStart(7, '0');

const s = {
  id: '',
  db: undefined,
  stop: false,
  /** The highest write acknowledged (-1: none), and how many were. */
  maxAcked: -1,
  ackedCount: 0,
  /** The log's floor: below it, range deletes acknowledged (`floorAcked`) or sent (`floorTried`) removed every entry. */
  floorAcked: 0,
  floorTried: 0,
  issued: 0,
  txAcked: 0,
  txTried: 0,
  mergeAcked: 0,
  mergeTried: 0,
  ops: { write: 0, transaction: 0, merge: 0, clear: 0, scan: 0, read: 0, snapshot: 0 },
  errors: [],
  wrong: [],
  events: 0,
  lastEvent: 0,
  gaps: 0,
  doubled: 0,
  work: undefined,
};

const allowed = (e, kinds) => kinds.includes(e?.code);

async function writer() {
  const inflight = new Set();
  for (let n = 0; !s.stop; n++) {
    s.issued = n + 1;
    const p = s.db.write(new lib.WriteBatch().put(`log/${s.id}/${pad(n)}`, enc.encode(String(n))).put(`last/${s.id}`, enc.encode(String(n)))).then(
      () => {
        s.maxAcked = Math.max(s.maxAcked, n);
        s.ackedCount++;
        s.ops.write++;
      },
      (e) => s.errors.push(`write ${n}: ${e.code}: ${e.message}`),
    );
    inflight.add(p);
    void p.finally(() => inflight.delete(p));
    if (n % 500 === 499 && s.maxAcked - 1000 > s.floorTried) {
      const f = s.maxAcked - 1000;
      s.floorTried = f;
      const d = s.db.deleteRange(`log/${s.id}/`, `log/${s.id}/${pad(f)}`).then(
        () => {
          s.floorAcked = Math.max(s.floorAcked, f);
        },
        (e) => s.errors.push(`trim below ${f}: ${e.code}: ${e.message}`),
      );
      inflight.add(d);
      void d.finally(() => inflight.delete(d));
    }
    if (inflight.size >= 4) await Promise.race(inflight);
    await new Promise((r) => setTimeout(r, 2));
  }
  await Promise.all(inflight);
}

/**
 * Checks a read of the log (the numbers present, in order): one run of
 * numbers, from a floor between the acknowledged and the sent one, to at
 * least `acked`. Returns what is wrong, or undefined.
 */
function checkLog(numbers, floorAcked, floorTried, acked) {
  // (floorTried: Infinity where what was sent is not known: a tab that went.)
  if (numbers.length === 0) return acked >= 0 ? `the log is empty, write ${acked} was acknowledged` : undefined;
  const lo = numbers[0];
  for (let i = 1; i < numbers.length; i++) if (numbers[i] !== lo + i) return `log ${lo + i} missing before ${numbers[i]}`;
  if (lo < floorAcked) return `log ${lo} is there, below ${floorAcked}, which a range delete acknowledged`;
  if (lo > floorTried) return `the log starts at ${lo}, above every range delete sent (${floorTried})`;
  const hi = numbers.at(-1);
  if (hi < acked) return `the log ends at ${hi}, write ${acked} was acknowledged`;
  return undefined;
}

/** The log's numbers, in order (each value checked against its key). */
async function readLog(db, id, options = {}) {
  const numbers = [];
  for await (const [key, value] of db.iterator({ gte: `log/${id}/`, lt: `log/${id}0`, ...options })) {
    const n = Number(dec.decode(key).split('/')[2]);
    if (Number(dec.decode(value)) !== n) s.wrong.push(`log ${id}/${n} holds ${dec.decode(value)}`);
    numbers.push(n);
  }
  return numbers;
}

async function mixer(rnd) {
  while (!s.stop) {
    const r = rnd();
    const ackedBefore = s.maxAcked;
    try {
      if (r < 0.25) {
        s.txTried++;
        await s.db.transaction(async (tx) => {
          const v = await tx.get(`ctr/${s.id}`);
          tx.put(`ctr/${s.id}`, u64(fromU64(v) + 1));
        });
        s.txAcked++;
        s.ops.transaction++;
      } else if (r < 0.45) {
        s.mergeTried++;
        await s.db.merge(`sum/${s.id}`, u64(1));
        s.mergeAcked++;
        s.ops.merge++;
      } else if (r < 0.55) {
        const n = 1 + Math.floor(rnd() * 20);
        const b = new lib.WriteBatch();
        for (let i = 0; i < n; i++) b.put(`tmp/${s.id}/${pad(i)}`, new Uint8Array(100));
        await s.db.write(b);
        await s.db.clear({ gte: `tmp/${s.id}/`, lt: `tmp/${s.id}0` });
        const left = await s.db.count({ gte: `tmp/${s.id}/`, lt: `tmp/${s.id}0` });
        if (left !== 0) s.wrong.push(`clear: ${left} keys left after an acknowledged clear`);
        s.ops.clear++;
      } else if (r < 0.65) {
        const floor = s.floorAcked;
        const numbers = await readLog(s.db, s.id, rnd() < 0.5 ? {} : { batchSize: 7 });
        const bad = checkLog(numbers, floor, s.floorTried, ackedBefore);
        if (bad !== undefined) s.wrong.push(`scan: ${bad}`);
        s.ops.scan++;
      } else if (r < 0.9) {
        const v = await s.db.get(`last/${s.id}`);
        const last = v === undefined ? -1 : Number(dec.decode(v));
        if (last < ackedBefore) s.wrong.push(`read: last/ is ${last}, write ${ackedBefore} was acknowledged before`);
        s.ops.read++;
      } else {
        const snap = await s.db.snapshot();
        try {
          const a = await s.db.get(`last/${s.id}`, { snapshot: snap });
          await new Promise((r) => setTimeout(r, 20));
          const b = await s.db.get(`last/${s.id}`, { snapshot: snap });
          if ((a && dec.decode(a)) !== (b && dec.decode(b))) s.wrong.push('snapshot: a read at one snapshot changed');
        } finally {
          await snap.release().catch(() => {});
        }
        s.ops.snapshot++;
      }
    } catch (e) {
      // A failover may take a snapshot's leader (LeaderChanged) or leave a
      // commit's outcome unknown (LeaderChanged); nothing else may fail.
      if (!allowed(e, ['LeaderChanged'])) s.errors.push(`${r.toFixed(2)}: ${e.code}: ${e.message}`);
    }
    await new Promise((r) => setTimeout(r, 1 + Math.floor(rnd() * 5)));
  }
}

async function watcher() {
  const since = await s.db.latestSequence();
  const seen = new Set();
  for await (const e of s.db.watch({ since, gte: `log/${s.id}/`, lt: `log/${s.id}0` })) {
    if (e.kind === 'gap') {
      s.gaps++;
      continue;
    }
    if (e.kind !== 'put') continue; // the log's range deletes
    const k = dec.decode(e.key);
    if (seen.has(k)) s.doubled++;
    seen.add(k);
    if (e.seq <= s.lastEvent) s.wrong.push(`watch: event ${e.seq} after ${s.lastEvent}`);
    s.lastEvent = e.seq;
    s.events++;
    if (seen.size > 100_000) seen.clear();
  }
}

window.soak = {
  async start({ name, id, seed }) {
    s.id = id;
    s.db = await lib.connect(name, { mergeOperator: 'u64add' });
    void watcher().catch((e) => {
      if (!s.stop) s.errors.push(`watch: ${e.code}: ${e.message}`);
    });
    s.work = Promise.all([writer(), mixer(schedule(seed))]);
  },
  isLeader: () => s.db?.isLeader ?? false,
  /** What a driver samples: progress, the page's JS heap (Chromium), the origin's storage, the leader's memory and files. */
  async sample() {
    const heap = performance.memory?.usedJSHeapSize ?? 0;
    const estimate = await navigator.storage.estimate().catch(() => ({ usage: 0 }));
    let stats;
    if (s.db?.isLeader) {
      const st = await s.db.statistics().catch(() => undefined);
      if (st !== undefined) {
        const p = st.properties;
        stats = {
          wasmBytes: st.memory.bytes,
          heapBytes: st.memory.heapBytes,
          tableBytes: p.tableBytes,
          memtableBytes: p.allMemtableBytes,
          blockCacheUsage: p.blockCacheUsage,
        };
      }
    }
    return { ops: Object.values(s.ops).reduce((a, b) => a + b, 0), pageHeap: heap, storage: estimate.usage ?? 0, leader: stats };
  },
  state() {
    return {
      id: s.id,
      acked: s.maxAcked,
      ackedCount: s.ackedCount,
      issued: s.issued,
      txAcked: s.txAcked,
      txTried: s.txTried,
      mergeAcked: s.mergeAcked,
      mergeTried: s.mergeTried,
      ops: { ...s.ops },
      errors: s.errors.slice(0, 20),
      wrong: s.wrong.slice(0, 20),
      floorAcked: s.floorAcked,
      floorTried: s.floorTried,
      events: s.events,
      gaps: s.gaps,
      doubled: s.doubled,
    };
  },
  async stop() {
    s.stop = true;
    await s.work;
    return this.state();
  },
  async close() {
    await s.db?.close();
  },
  /** Deletes every key of tab `id` (one that went, and was checked): the data stays bounded however many tabs come and go. */
  async forget(id) {
    const b = new lib.WriteBatch().delete(`last/${id}`).delete(`ctr/${id}`).delete(`sum/${id}`);
    await s.db.write(b);
    await s.db.clear({ gte: `log/${id}/`, lt: `log/${id}0` });
    await s.db.clear({ gte: `tmp/${id}/`, lt: `tmp/${id}0` });
  },
  /**
   * Checks what the database holds of tabs `tabs` (each tab's last state:
   * what it knew was acknowledged and sent; of a tab that went, `gone`,
   * what it sent after is not known: only what was acknowledged bounds)
   * and returns what is wrong.
   */
  async check(tabs) {
    const problems = [];
    const value = async (key) => s.db.get(key);
    for (const t of tabs) {
      const sent = (n) => (t.gone ? Number.POSITIVE_INFINITY : n);
      const bad = checkLog(await readLog(s.db, t.id), t.floorAcked, sent(t.floorTried), t.acked);
      if (bad !== undefined) problems.push(`${t.id}: ${bad}`);
      const ctr = fromU64(await value(`ctr/${t.id}`));
      if (ctr < t.txAcked || ctr > sent(t.txTried)) problems.push(`${t.id}: ctr is ${ctr}, ${t.txAcked} commits acknowledged of ${t.txTried}`);
      const sum = fromU64(await value(`sum/${t.id}`));
      if (sum < t.mergeAcked || sum > sent(t.mergeTried)) problems.push(`${t.id}: sum is ${sum}, ${t.mergeAcked} merges acknowledged of ${t.mergeTried}`);
      const left = await s.db.count({ gte: `tmp/${t.id}/`, lt: `tmp/${t.id}0` });
      if (left > 20) problems.push(`${t.id}: ${left} tmp keys left`);
    }
    problems.push(...s.wrong);
    const verified = await s.db.verify();
    return { problems, verified };
  },
};
