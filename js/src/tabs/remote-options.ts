/** The options and reports of `connect()`'s `RemoteDatabase` (remote-database.ts). */

import type { CountRange, ValueReadOptions } from '../core/call-options.js';
import type { Statistics } from '../local/statistics.js';
import type { PageCacheStatistics } from './page-cache.js';
import type { RemoteSnapshot } from './remote-snapshot.js';

/** Read options of a connection: a snapshot, and the call's own value encoding. */
export interface RemoteReadOptions<V = Uint8Array> extends ValueReadOptions<V, RemoteSnapshot> {}

/** A range, and the snapshot to count it at. */
export interface RemoteCountOptions<K> extends CountRange<K, RemoteSnapshot> {}

/** Statistics of a connection: the database's, and the leader's. */
export interface RemoteStatistics extends Statistics {
  tabs: {
    /** Writes sent again after a failover and found already applied (acknowledged, not applied twice). */
    duplicateWrites: number;
    /** Followers that attached to this leader. */
    attached: number;
    /** Connections the leader forgot because they closed or went. */
    dropped: number;
    /**
     * Requests the leader refused for their shape or version, and messages
     * it dropped as no request at all: what another tab running another
     * siltdb, or a bug, posted (docs/tabs.md, "Versions").
     */
    malformed: number;
    /** Connections the leader serves now, its own page included. */
    connections: number;
    /** Of those, the ones it sends change records to: a watch, a live query or a page cache is open there. */
    watching: number;
    /** Of those, the ones whose change records carry values: a `watch({ values: true })` or a live query is open there. */
    watchingValues: number;
  };
  /** This connection's page cache (`pageCacheCapacity`), if it has one. */
  pageCache?: PageCacheStatistics;
}
