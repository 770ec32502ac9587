/** The options and reports of `connect()`'s `RemoteDatabase` (remote-database.ts). */

import type { EncodingOption, RangeOptions } from '../core/encoding.js';
import type { Statistics } from '../local/statistics.js';
import type { RemoteSnapshot } from './remote-snapshot.js';

/** Read options of a connection. */
export interface RemoteReadOptions<V = Uint8Array> {
  snapshot?: RemoteSnapshot;
  /** Decode the value(s) with this encoding instead of the database's. */
  valueEncoding?: EncodingOption<V>;
}

/** A range, and the snapshot to count it at. */
export interface RemoteCountOptions<K> extends RangeOptions<K> {
  snapshot?: RemoteSnapshot;
}

/** Statistics of a connection: the database's, and the leader's. */
export interface RemoteStatistics extends Statistics {
  tabs: {
    /** Writes sent again after a failover and found already applied (acknowledged, not applied twice). */
    duplicateWrites: number;
    /** Followers that attached to this leader. */
    attached: number;
    /** Connections the leader forgot because they closed or went. */
    dropped: number;
    /** Connections the leader serves now, its own page included. */
    connections: number;
  };
}
