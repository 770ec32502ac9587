// The page side of bench/run/page.mjs, imported into the page
// (bench/browser/page/index.html) once the cold starts are measured: sets up
// every peer (peers.js) with the same keys, then times one operation of one
// peer per call from the runner, on this page's main thread, each call
// awaited before the next (or 32 at once in a Promise.all).
import { checksum, expectedChecksum, keyTextOf, valueFor } from '../common.js';
import { drawIndices } from './draw.js';
import { floor, floorFromAnotherTab, hostFloorForOtherTabs, indexeddb, silt, sqliteWorker } from './peers.js';
import { rpc } from './rpc.js';

const peers = {};
/** The keys 'hot' reads (the first ones): what a page reads again and again. */
const HOT = 1000;
/** The page cache of the 'silt:cache' peer: room for every hot key. */
const PAGE_CACHE = 4 << 20;
let inWorker;

/** Opens every peer and writes keys 0..keys-1 into each; resolves with what each reports of its options. */
export async function setup({ name, keys }) {
  const report = {};
  const timed = async (id, f) => {
    const t0 = performance.now();
    await f();
    report[id] = { ...report[id], fillMs: performance.now() - t0 };
  };
  peers.floor = floor();
  await timed('floor', () => peers.floor.fill(keys));
  hostFloorForOtherTabs(peers.floor);
  peers['floor:logged'] = await peers.floor.logged(name);
  peers.silt = await silt(name);
  if (!peers.silt.db.isLeader) throw new Error('this page does not lead its connect() database');
  await timed('silt', () => peers.silt.fill(keys));
  // With a page cache: read only on the hot keys (its database holds those alone).
  peers['silt:cache'] = await silt(`${name}-cache`, { pageCacheCapacity: PAGE_CACHE });
  await timed('silt:cache', () => peers['silt:cache'].fill(Math.min(keys, HOT)));
  report['silt:cache'].options = { pageCacheCapacity: PAGE_CACHE };
  peers.indexeddb = await indexeddb(name);
  await timed('indexeddb', () => peers.indexeddb.fill(keys));
  report.indexeddb.scan = peers.indexeddb.scanWay;
  const sqlite = sqliteWorker();
  for (const [id, config] of [
    ['sqlite', 'exclusive'],
    ['sqlite:defaults', 'defaults'],
  ]) {
    peers[id] = await sqlite.open(config, `${name}-${config}`);
    report[id] = { options: peers[id].options };
    await timed(id, () => peers[id].fill(keys));
  }
  inWorker = rpc(new Worker(new URL('./silt-worker.js', import.meta.url), { type: 'module' }));
  const t0 = performance.now();
  await inWorker(['open', `${name}-in-worker`, keys]);
  report['silt:in-worker'] = { fillMs: performance.now() - t0 };
  return report;
}

/**
 * The calls of one measurement: `n` of them (each a group of 32 for
 * 'get32'), on the keys drawn from `seed`, with the values the puts write
 * (the value each key already has: the data never changes).
 */
function callsOf(op, n, keys, seed) {
  if (op === 'get32') {
    const idx = drawIndices(n * 32, keys, seed);
    const groups = [];
    for (let g = 0; g < n; g++) groups.push(Array.from(idx.subarray(g * 32, g * 32 + 32), keyTextOf));
    return { idx, args: groups };
  }
  const idx = drawIndices(n, op === 'scan' ? keys - 100 : op === 'hot' ? Math.min(keys, HOT) : keys, seed);
  const ks = Array.from(idx, keyTextOf);
  return { idx, args: op === 'put' ? ks.map((k, i) => [k, valueFor(idx[i])]) : ks };
}

/** Runs calls `args` of `op` on `p` until done or `maxMs` passed: [calls made, sum of the bytes read]. */
async function loop(op, p, args, maxMs, t0) {
  let sum = 0;
  let i = 0;
  const n = args.length;
  // The clock read every 64 calls only: a call is tens of µs at the least.
  if (op === 'get' || op === 'hot') {
    for (; i < n && ((i & 63) !== 0 || performance.now() - t0 < maxMs); i++) sum += checksum(await p.get(args[i]));
  } else if (op === 'put') {
    for (; i < n && ((i & 63) !== 0 || performance.now() - t0 < maxMs); i++) await p.put(args[i][0], args[i][1]);
  } else if (op === 'scan') {
    for (; i < n && ((i & 15) !== 0 || performance.now() - t0 < maxMs); i++) sum += await p.scan(args[i], 100);
  } else {
    for (; i < n && ((i & 3) !== 0 || performance.now() - t0 < maxMs); i++) {
      const values = await Promise.all(args[i].map(p.get));
      for (const v of values) sum += checksum(v);
    }
  }
  return [i, sum];
}

/**
 * Times `op` ('get', 'put', 'scan' of 100, 'get32': 32 gets in one
 * Promise.all) of peer `id`: `n` calls (or as many as `maxMs` allows),
 * after `warm` untimed ones; every byte of every value read is summed and
 * checked against the sum the keys predict. Resolves with µs per call
 * (per group of 32 for 'get32') and the calls made.
 */
export async function measure({ op, id, n, keys, seed, warm, maxMs }) {
  const p = peers[id];
  const w = callsOf(op, Math.min(warm, n), keys, seed ^ 0x5eed);
  await loop(op, p, w.args, Number.POSITIVE_INFINITY, 0);
  const before = id === 'silt:cache' ? (await p.db.statistics()).pageCache : undefined;
  const { idx, args } = callsOf(op, n, keys, seed);
  const t0 = performance.now();
  const [calls, sum] = await loop(op, p, args, maxMs, t0);
  const ms = performance.now() - t0;
  let want = 0;
  if (op === 'get' || op === 'hot') for (let i = 0; i < calls; i++) want += expectedChecksum(idx[i]);
  else if (op === 'get32') for (let i = 0; i < calls * 32; i++) want += expectedChecksum(idx[i]);
  else if (op === 'scan') for (let i = 0; i < calls; i++) for (let j = 0; j < 100; j++) want += expectedChecksum(idx[i] + j);
  if (sum !== want) throw new Error(`${id} ${op}: read ${sum}, the keys predict ${want}`);
  if (before !== undefined) {
    // The share of the timed gets the page cache answered.
    const after = (await p.db.statistics()).pageCache;
    return { us: (ms * 1000) / calls, calls, ms, hitRate: (after.hits - before.hits) / calls };
  }
  return { us: (ms * 1000) / calls, calls, ms };
}

/** Silt in a worker of its own (silt-worker.js): a get's and a scan's time there, µs. */
export async function measureInWorker({ gets, scans, keys, seed }) {
  return { getUs: await inWorker(['get', gets, keys, seed]), scanUs: await inWorker(['scan', scans, keys, seed]) };
}

/**
 * In another tab than the one `setup` ran in: the follower's peers, Silt
 * through `connect(name)` (that tab leads it) and the floor from here (a
 * port to that tab's floor worker).
 */
export async function setupFollower({ name }) {
  peers['follower-floor'] = floorFromAnotherTab();
  peers.follower = await silt(name);
  if (peers.follower.db.isLeader) throw new Error('the follower tab leads its connect() database');
}

/** Lets Silt's background work catch up (after the puts), so the next repetition starts alike. */
export async function settle() {
  await peers.silt.db.idle();
}

export async function teardownFollower() {
  await peers.follower.close();
  await peers['follower-floor'].close();
}

export async function teardown() {
  await inWorker(['close']);
  for (const p of Object.values(peers)) await p.close();
}
