// A dedicated worker that connects to a database shared with pages
// (tests/e2e/tabs.spec.ts): no SharedWorker here, so it reaches the leader
// over its BroadcastChannel. The page asks it to run one step at a time.
import { connect } from '/siltdb/dist/index.js';

const enc = new TextEncoder();
const dec = new TextDecoder();
let db;
const seen = [];

const steps = {
  async connect({ name }) {
    db = await connect(name);
    db.watch({ gte: 'page/', lt: 'page0' }, (e) => {
      if (e.kind !== 'gap') seen.push(dec.decode(e.key));
    });
    return { leader: db.isLeader, broker: typeof SharedWorker === 'function' };
  },
  async put({ key, value }) {
    await db.put(key, enc.encode(value));
    return 'ok';
  },
  async get({ key }) {
    const v = await db.get(key);
    return v === undefined ? null : dec.decode(v);
  },
  async scan() {
    const keys = [];
    for await (const [k] of db.iterator({ autoRefresh: true, batchSize: 2 })) keys.push(dec.decode(k));
    return keys;
  },
  async seen() {
    return seen;
  },
  async close() {
    await db.close();
    return 'closed';
  },
};

self.onmessage = async ({ data }) => {
  try {
    self.postMessage({ id: data.id, value: await steps[data.step](data.args ?? {}) });
  } catch (e) {
    self.postMessage({ id: data.id, error: `${e.code ?? 'none'}: ${e.message}` });
  }
};
