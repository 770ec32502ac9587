/**
 * A worker database's side of a live query (tabs/live-query.ts): its
 * window read with the handle's own iterator, at the latest sequence
 * number (a worker's reads are synchronous: nothing writes between the
 * number and the read), and the watches' feed made first, so that a write
 * made right after the read is in the feed's history.
 */

import type { Codec } from '../core/encoding.js';
import type { LiveSource } from '../tabs/live-query.js';
import type { Core } from './core.js';

/** What a live query reads of a worker's database handle (its public reads). */
export interface LocalReads {
  latestSequence(): number;
  iterator<IV>(options: object): Iterable<[unknown, IV]>;
  keys(options: object): Iterable<unknown>;
}

export function localLiveSource(db: LocalReads, core: Core, codec: Codec): LiveSource {
  return {
    codec,
    host: () => core.feedForWatch(),
    read: async ({ range, values }) => {
      core.feedForWatch();
      const seq = db.latestSequence();
      const entries: [Uint8Array, Uint8Array | undefined][] = [];
      if (values) {
        for (const [k, v] of db.iterator<Uint8Array>(range)) entries.push([(k as Uint8Array).slice(), v.slice()]);
      } else {
        for (const k of db.keys(range)) entries.push([(k as Uint8Array).slice(), undefined]);
      }
      return { seq, entries };
    },
  };
}
