/**
 * Messages between `connect()` on a page and the worker it starts
 * (worker.ts). Keys and values travel as copies; buffers the worker
 * creates for the page are transferred, not copied again.
 */

import type { Key } from './bytes.js';
import type { OpenOptions } from './open.js';

export type IteratorRequestOptions = {
  gt?: Key;
  gte?: Key;
  lt?: Key;
  lte?: Key;
  reverse?: boolean;
  batchSize?: number;
  autoRefresh?: boolean;
};

export type Request =
  | { op: 'open'; name: string; options: Omit<OpenOptions, 'signal'> }
  | { op: 'put'; key: Key; value: Uint8Array; sync?: boolean }
  | { op: 'delete'; key: Key; sync?: boolean }
  | { op: 'deleteRange'; start: Key; end: Key; sync?: boolean }
  | { op: 'compactRange'; begin?: Key; end?: Key }
  | { op: 'write'; batch: Uint8Array; count: number; sync?: boolean }
  | { op: 'get'; key: Key; snapshot: number }
  | { op: 'multiGet'; keys: Key[]; snapshot: number }
  | { op: 'snapshot' }
  | { op: 'releaseSnapshot'; snapshot: number }
  | { op: 'iterator'; options: IteratorRequestOptions; snapshot: number }
  | { op: 'next'; iterator: number }
  | { op: 'releaseIterator'; iterator: number }
  | { op: 'flush' }
  | { op: 'idle' }
  | { op: 'statistics' }
  | { op: 'verify' }
  | { op: 'close' };

export type Envelope = { id: number; request: Request };

export type Response = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: { code: string; message: string } };

/** `multiGet` over the wire: every value back to back, and their lengths (-1 = none). */
export type PackedValues = { bytes: Uint8Array; lens: Int32Array };
