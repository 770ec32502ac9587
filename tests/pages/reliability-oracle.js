// The oracle of the browser kill tests: a deterministic, seeded stream of
// write operations over a small key space, and a model of the database
// after any prefix of it. The stream is one endless sequence per seed: op i
// is the same in every worker that replays it, so a worker started after a
// kill can tell which prefix of the stream the recovered database holds.

/** Keys `r00000` .. `r01199`: few enough that keys are rewritten and deleted often. */
export const KEYS = 1200;
export const keyOf = (x) => `r${String(x).padStart(5, '0')}`;
const KEY = /^r(\d{5})$/;
/** The index of a key of the space, or -1. */
export const indexOf = (k) => {
  const m = KEY.exec(k);
  const x = m ? Number(m[1]) : -1;
  return x >= 0 && x < KEYS ? x : -1;
};

/**
 * sfc32 (Chris Doty-Humphrey's small fast counter), seeded through
 * splitmix32: a few lines of well-known arithmetic, so that pages served
 * without a bundler need no npm dependency for it.
 */
export function rng(seed) {
  let s = seed >>> 0;
  const split = () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  };
  let a = split();
  let b = split();
  let c = split();
  let d = split();
  const next = () => {
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
  for (let i = 0; i < 12; i++) next();
  return next;
}

const FILL = 'abcdefghijklmnopqrstuvwxyz0123456789';

/**
 * The value op `i` (part `j` of a batch) writes to key `x`: names its
 * writer, so a value from the wrong write, or a torn one, never passes.
 */
export function valueFor(i, j, x, len) {
  const head = `${i}.${j}:${x}:`;
  let s = head;
  while (s.length < len) s += FILL;
  return s.slice(0, Math.max(len, head.length));
}

/**
 * The stream of operations of `seed`. Each `next()` is one write call (a
 * put, a delete, a range delete or a batch of those, atomic either way),
 * sometimes with `sync`, or a manual compaction of a key range.
 */
export class Stream {
  #r;
  /** Index of the next op. */
  i = 0;

  constructor(seed) {
    this.#r = rng(seed);
  }

  #int(n) {
    return Math.floor(this.#r() * n);
  }

  #len() {
    const p = this.#r();
    // Mostly small values, some of a few KiB: memtables of 64 KiB fill
    // every few hundred ops, so flushes and compactions never stop.
    return p < 0.02 ? 2048 + this.#int(6144) : 8 + this.#int(300);
  }

  #single(i, j) {
    const p = this.#r();
    if (p < 0.7) {
      const x = this.#int(KEYS);
      return { kind: 'put', x, value: valueFor(i, j, x, this.#len()) };
    }
    if (p < 0.93) return { kind: 'delete', x: this.#int(KEYS) };
    const a = this.#int(KEYS);
    return { kind: 'deleteRange', a, b: Math.min(KEYS, a + 1 + this.#int(48)) };
  }

  next() {
    const i = this.i++;
    const p = this.#r();
    let op;
    if (p < 0.004) {
      const a = this.#int(KEYS);
      op = { kind: 'compact', a, b: Math.min(KEYS - 1, a + this.#int(KEYS)), wait: this.#r() < 0.3 };
    } else if (p < 0.25) {
      const n = 2 + this.#int(15);
      op = { kind: 'batch', ops: Array.from({ length: n }, (_, j) => this.#single(i, j)) };
    } else {
      op = this.#single(i, 0);
    }
    op.i = i;
    op.sync = op.kind !== 'compact' && this.#r() < 0.2;
    return op;
  }
}

/**
 * Applies `op` to `model` (an array of values by key index) and calls
 * `touch(x)` before each key it changes.
 */
export function apply(model, op, touch = () => {}) {
  switch (op.kind) {
    case 'put':
      touch(op.x);
      model[op.x] = op.value;
      break;
    case 'delete':
      touch(op.x);
      model[op.x] = undefined;
      break;
    case 'deleteRange':
      for (let x = op.a; x < op.b; x++) {
        if (model[x] === undefined) continue;
        touch(x);
        model[x] = undefined;
      }
      break;
    case 'batch':
      for (const o of op.ops) apply(model, o, touch);
      break;
    case 'compact':
      break;
    default:
      throw new Error(`unknown op ${op.kind}`);
  }
}

/**
 * Which prefixes of the stream `seed`, between `from` and `to` ops, leave
 * exactly the state `seen` (values by key index)? Returns the longest such
 * prefix (-1 if none) and, for a diagnosis, the fewest keys that differed.
 * REQUIRES: `model` is the state after `from` ops and `stream` is at op `from`.
 */
export function longestMatchingPrefix(stream, model, from, to, seen) {
  let differ = 0;
  for (let x = 0; x < KEYS; x++) if (model[x] !== seen[x]) differ++;
  let longest = differ === 0 ? from : -1;
  let fewest = differ;
  const before = new Map();
  for (let k = from; k < to; k++) {
    const op = stream.next();
    before.clear();
    apply(model, op, (x) => {
      if (!before.has(x)) before.set(x, model[x] !== seen[x]);
    });
    for (const [x, was] of before) differ += (model[x] !== seen[x] ? 1 : 0) - (was ? 1 : 0);
    if (differ === 0) longest = k + 1;
    fewest = Math.min(fewest, differ);
  }
  return { longest, fewest };
}
