// What every engine adapter and the workloads share: the keys and values
// (generated from the key index, so every engine stores the same bytes and
// every checksum can be predicted), the checksum that reads every byte of a
// value, a seeded PRNG, and the list of shipped files for the bundle-size
// report.
//
// Keys follow db_bench (and silt-bench, bench/native):
// 16 bytes, the index big-endian in the first 8, then eight '0' bytes, so
// byte order is numeric order. Values are 100 bytes, half of them
// compressible (db_bench's default compression ratio of 0.5): even bytes a
// letter from a PRNG seeded by the index, odd bytes 'x'.

export const KEY_BYTES = 16;
export const VALUE_BYTES = 100;

/**
 * The sum of every byte of `value`, read one by one in a plain loop: what
 * each read does with the value it got, so a zero-copy view is really read
 * (and a lazy or detached one would show).
 */
export function checksum(value) {
  let sum = 0;
  for (let i = 0; i < value.length; i++) sum += value[i];
  return sum;
}

/** mulberry32: a small, fast, seeded 32-bit PRNG; returns uint32s. */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

/** A uniform integer in [0, n) from `next` (a uint32 PRNG); n ≤ 2^32. */
export const below = (next, n) => Math.floor((next() / 2 ** 32) * n);

/** Key `i` (0 ≤ i < 2^53): the index big-endian in 8 bytes, then 8 × '0'. */
export function keyOf(i) {
  const k = new Uint8Array(KEY_BYTES).fill(0x30);
  const dv = new DataView(k.buffer);
  dv.setUint32(0, Math.floor(i / 2 ** 32));
  dv.setUint32(4, i >>> 0);
  return k;
}

/**
 * Key `i` as db_bench once printed it (`%016d`): 16 decimal digits, as a
 * string, so byte order is numeric order too. The page benchmark's keys
 * (bench/run/page.mjs): what a page passes to each peer's API as it is.
 */
export const keyTextOf = (i) => String(i).padStart(KEY_BYTES, '0');

/** The index of a key made by `keyOf` (for adapters and checks). */
export function indexOf(key) {
  const dv = new DataView(key.buffer, key.byteOffset, key.byteLength);
  return dv.getUint32(0) * 2 ** 32 + dv.getUint32(4);
}

/** Value `i`: 100 bytes, a function of `i` only. */
export function valueFor(i) {
  const r = rng(i ^ 0x9e3779b9);
  const v = new Uint8Array(VALUE_BYTES);
  for (let j = 0; j < VALUE_BYTES; j++) v[j] = j % 2 === 0 ? 97 + (r() % 26) : 120;
  return v;
}

/** `checksum(valueFor(i))`, without keeping the value. */
export const expectedChecksum = (i) => checksum(valueFor(i));

/** A permutation of 0..n-1 (Fisher–Yates with a seeded PRNG). */
export function permutation(n, seed) {
  const p = new Uint32Array(n);
  for (let i = 0; i < n; i++) p[i] = i;
  const r = rng(seed);
  for (let i = n - 1; i > 0; i--) {
    const j = below(r, i + 1);
    const t = p[i];
    p[i] = p[j];
    p[j] = t;
  }
  return p;
}

/** The median of a list of numbers (the upper one of an even count). */
export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

const STATIC_IMPORT = /(?:^|[\s;])(?:import|export)\s*(?:[\w*{}\s,$]+?\s*from\s*)?['"](\.{1,2}\/[^'"]+)['"]/g;

/**
 * Every URL of the ES module graph that `entry` loads through relative
 * static imports (`import ... from './x.js'`, `export ... from`,
 * `import './x.js'`), entry included, plus `extra` (e.g. the `.wasm` the
 * glue fetches): the JavaScript and wasm a user of that entry ships, for
 * the bundle-size report. Fetches each module once. Throws, naming the
 * URL, if one cannot be fetched.
 */
export async function moduleGraph(entry, extra = []) {
  const seen = new Set();
  const queue = [new URL(entry, location.href).href];
  while (queue.length > 0) {
    const url = queue.shift();
    if (seen.has(url)) continue;
    seen.add(url);
    const res = await fetch(url);
    if (!res.ok) throw new Error(`moduleGraph: ${url} answered ${res.status}`);
    const text = await res.text();
    for (const m of text.matchAll(STATIC_IMPORT)) queue.push(new URL(m[1], url).href);
  }
  const origin = location.origin;
  return [...seen, ...extra.map((e) => new URL(e, location.href).href)].map((u) => (u.startsWith(origin) ? u.slice(origin.length) : u));
}

/** A balance or counter as stored: 8 bytes, unsigned little-endian (the 'u64add' merge operator's format). */
export function u64Bytes(n) {
  const b = new Uint8Array(8);
  const v = new DataView(b.buffer);
  v.setUint32(0, n % 2 ** 32, true);
  v.setUint32(4, Math.floor(n / 2 ** 32), true);
  return b;
}

/** The number in 8 bytes written by `u64Bytes` (below 2^53). */
export function u64Of(bytes) {
  const v = new DataView(bytes.buffer, bytes.byteOffset, 8);
  return v.getUint32(0, true) + v.getUint32(4, true) * 2 ** 32;
}

/** The key of account or counter `i` of the transaction workloads: "acct/" or "ctr/" and 8 digits (not 16 bytes). */
export const accountKey = (prefix, i) => new TextEncoder().encode(`${prefix}${String(i).padStart(8, '0')}`);
