// Live queries in the protocol model (protocol-model.test.ts): a tab that
// connects may follow the ledger key `L` (every write of the model appends
// to it) with `liveGet`, and the first keys of the `t:` range with `live`,
// through every failover, crash and import the schedule brings. Once the
// schedule has settled, a tab still open whose queries did not fail must
// show exactly what the database holds, and its ledger must never have gone
// back (each result's ledger a prefix of the next) unless an import
// replaced it.
import type { Database } from '../src/index.js';
import type { Live, LiveResult, LiveValue } from '../src/tabs/live-query.js';
import type { RemoteDatabase } from '../src/tabs/remote-database.js';

const text = (b: Uint8Array | undefined) => (b === undefined ? '' : new TextDecoder().decode(b));

/** How many keys of `t:` the range query shows. */
const LIMIT = 5;

/** A tab's live queries, and what they emitted. */
export interface Followed {
  ledger: Live<LiveValue<Uint8Array>>;
  range: Live<LiveResult<Uint8Array, Uint8Array>>;
  ledgers: { seq: number; value: string }[];
  ranges: number[];
  /** Why a query failed (its connection failed), if one did. */
  failed?: string;
}

/** Follows `L` and the first keys of `t:` through `db`. */
export function follow(db: RemoteDatabase): Followed {
  const f: Followed = {
    ledger: db.liveGet('L'),
    range: db.live({ gte: 't:', lt: 't:~', limit: LIMIT, values: false }),
    ledgers: [],
    ranges: [],
  };
  const failed = (e: { code?: string }) => {
    f.failed ??= e.code ?? String(e);
  };
  f.ledger.subscribe({ next: (r) => f.ledgers.push({ seq: r.seq, value: text(r.value) }), error: failed });
  f.range.subscribe({ next: (r) => f.ranges.push(r.seq), error: failed });
  return f;
}

/**
 * What `f` got wrong, the schedule settled on database `db`; `imported`: an
 * import may have replaced the ledger; `ledgerAt`: the ledger after each
 * write, by its last sequence number (each result must be one of them).
 */
export function checkFollowed(name: string, f: Followed, db: Database, imported: boolean, ledgerAt: Map<number, string>): string[] {
  if (f.failed !== undefined) return [];
  const bad: string[] = [];
  const ledger = text(db.get('L'));
  const current = f.ledger.current;
  if (current === undefined) bad.push(`${name}: its liveGet('L') has no result`);
  else if (text(current.value) !== ledger)
    bad.push(`${name}: its liveGet('L') shows ${text(current.value).length} bytes at ${current.seq}; the database has ${ledger.length}`);
  const keys = [...db.keys({ gte: 't:', lt: 't:~', limit: LIMIT })].map((k) => text(k)).join(' ');
  const shown = f.range.current?.entries.map(([k]) => text(k)).join(' ');
  if (shown !== keys) bad.push(`${name}: its live range shows [${shown}]; the database has [${keys}]`);
  if (!imported) {
    for (const r of f.ledgers) {
      const want = ledgerAt.get(r.seq);
      if (want === undefined) bad.push(`${name}: liveGet('L') has a result at ${r.seq}, not the end of a write`);
      else if (want !== r.value) bad.push(`${name}: liveGet('L') at ${r.seq} shows ${r.value.length} bytes; the ledger had ${want.length} then`);
    }
  }
  for (let i = 1; i < f.ledgers.length; i++) {
    const [a, b] = [f.ledgers[i - 1]!, f.ledgers[i]!];
    if (b.seq < a.seq) bad.push(`${name}: liveGet('L') went back from ${a.seq} to ${b.seq}`);
    if (!imported && !b.value.startsWith(a.value)) bad.push(`${name}: liveGet('L') at ${b.seq} is not what it showed at ${a.seq} and more`);
  }
  for (let i = 1; i < f.ranges.length; i++)
    if (f.ranges[i]! < f.ranges[i - 1]!) bad.push(`${name}: its live range went back from ${f.ranges[i - 1]} to ${f.ranges[i]}`);
  f.ledger.close();
  f.range.close();
  return bad;
}
