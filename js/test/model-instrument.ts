// What the model-based test of the tab protocol (protocol-model.test.ts)
// watches of the database its tabs share: what each write applies, by
// token, and in what order; the sequence numbers of the app's updates
// (what watches must report); the latest sequence number at a flush; the
// iterators made on it; and crashes of the leading tab at its writes.
import type { Database } from '../src/local/database.js';
import type { EntryIterator } from '../src/local/iterator.js';
import { Transaction } from '../src/local/transaction.js';
import { isReserved } from '../src/tabs/write-records.js';
import type { Origin } from './tabs-harness.js';
import type { Realm, Rng } from './tabs-world.js';

const text = (b: Uint8Array) => new TextDecoder().decode(b);

/** The updates of an encoded batch, in order: each takes the next sequence number. */
function updatesOf(b: Uint8Array): { tag: number; key: Uint8Array }[] {
  const u32 = (at: number) => (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24)) >>> 0;
  const out: { tag: number; key: Uint8Array }[] = [];
  for (let at = 0; at < b.length; ) {
    const tag = b[at]!;
    const a = u32(at + 1);
    const head = tag === 0 ? 5 : 9;
    const vlen = tag === 0 ? 0 : u32(at + 5);
    out.push({ tag, key: b.subarray(at + head, at + head + a) });
    at += head + a + vlen;
  }
  return out;
}

const commitWith = Transaction.commitWith;

/**
 * Counts what the database applies, by token, and the sequence numbers of
 * the app's updates (what watches must report); tracks the iterators made
 * on it; and crashes the leading tab at some of its writes.
 */
export class Instrument {
  applied = new Map<string, number>();
  order = new Map<string, number>();
  /** Sequence numbers of the app's updates applied (not write records), and what took them. */
  updates = new Map<number, string>();
  #iterators = new Set<EntryIterator<unknown, unknown>>();
  #n = 0;
  crashes = 0;
  /** The ledger key `L` after each write, by the write's last sequence number (live queries' results are checked against it). */
  ledgerAt = new Map<number, string>();
  /** The latest sequence number at the last flush (what it moved out of the memtables, a new leader cannot publish). */
  flushedAt = 0;
  /** Called with the tab about to be killed at a write. */
  onCrash: (page: Realm) => void = () => {};
  constructor(
    readonly db: Database,
    readonly o: Origin,
    readonly rng: Rng,
    public crashRate: number,
  ) {
    this.#ledger();
    const write = db.write.bind(db);
    const ingest = db.ingest.bind(db);
    const iterator = db.iterator.bind(db);
    const begin = db.begin.bind(db);
    const flush = db.flush.bind(db);
    const compactRange = db.compactRange.bind(db);
    (db as { flush: Database['flush'] }).flush = () => {
      this.flushedAt = db.latestSequence();
      flush();
    };
    (db as { compactRange: Database['compactRange'] }).compactRange = (begin, end) => {
      this.flushedAt = db.latestSequence();
      return compactRange(begin, end);
    };
    (db as { write: Database['write'] }).write = ((b, opts) => {
      this.#gate();
      const first = db.latestSequence() + 1;
      const r = write(b, opts);
      const encoded = (b as { encoded(): Uint8Array }).encoded();
      this.#count(encoded);
      for (const [i, u] of updatesOf(encoded).entries()) if (u.tag !== 0x81 && !isReserved(u.key)) this.updates.set(first + i, `write of ${text(u.key)}`);
      this.#ledger();
      this.#after();
      return r;
    }) as Database['write'];
    (db as { ingest: Database['ingest'] }).ingest = (async (entries, opts) => {
      this.#gate();
      const r = await ingest(entries, opts);
      this.#count((entries as { encoded(): Uint8Array }).encoded(), true);
      if (r.keys > 0) this.updates.set(r.sequence, 'ingest');
      this.#ledger();
      this.#after();
      return r;
    }) as Database['ingest'];
    const track = <T extends EntryIterator<unknown, unknown>>(it: T): T => {
      this.#iterators.add(it);
      return it;
    };
    (db as { iterator: Database['iterator'] }).iterator = ((options) => track(iterator(options))) as Database['iterator'];
    (db as { begin: Database['begin'] }).begin = (() => {
      const tx = begin();
      const txIterator = tx.iterator.bind(tx);
      (tx as { iterator: typeof tx.iterator }).iterator = ((options) => track(txIterator(options))) as typeof tx.iterator;
      return tx;
    }) as Database['begin'];
    // A transaction's commit: its updates, then its write record.
    Transaction.commitWith = (tx, options, key, value) => {
      const first = db.latestSequence() + 1;
      commitWith(tx, options, key, value);
      for (let q = first; q < db.latestSequence(); q++) this.updates.set(q, 'transaction');
      this.#ledger();
    };
  }

  #ledger(): void {
    const v = this.db.get('L');
    this.ledgerAt.set(this.db.latestSequence(), v === undefined ? '' : text(v));
  }

  /** Iterators made on the database and not released. */
  get liveIterators(): number {
    let n = 0;
    for (const it of this.#iterators) if (!it.released) n++;
    return n;
  }

  restore(): void {
    Transaction.commitWith = commitWith;
  }

  /** A worker that died writes nothing more; a live one may die here (before the write). */
  #gate(): void {
    const h = this.o.storage.holder;
    if (h === undefined || h.inner.dead) throw new Error('crashed: this worker is gone');
    if (this.crashRate > 0 && this.rng.chance(this.crashRate / 2)) {
      this.crashes++;
      this.onCrash(h.page);
      this.o.world.kill(h.page);
      throw new Error('crashed before this write');
    }
  }

  /** ... or after it. */
  #after(): void {
    const h = this.o.storage.holder;
    if (h !== undefined && !h.inner.dead && this.crashRate > 0 && this.rng.chance(this.crashRate / 2)) {
      this.crashes++;
      this.onCrash(h.page);
      this.o.world.kill(h.page);
    }
  }

  #count(b: Uint8Array, ingest = false): void {
    const seen = new Set<string>();
    for (const u of updatesOf(b)) {
      const tag = u.tag;
      const key = text(u.key);
      const m = /^[tci]:(\d+)/.exec(key);
      if (m === null || tag === 0x81) continue;
      if (key.startsWith('c:') && tag !== 3) continue;
      if (ingest || key.startsWith('t:') || key.startsWith('c:')) seen.add(m[1]!);
    }
    for (const t of seen) {
      this.applied.set(t, (this.applied.get(t) ?? 0) + 1);
      if (!this.order.has(t)) this.order.set(t, this.#n++);
    }
  }
}
