/**
 * What a connection (connection.ts) reads from the lines it has to a
 * leader and to its own worker, and the page events it follows. Any realm
 * of the origin can post on a BroadcastChannel, and a leader may run
 * another siltdb: a message is read only with the shape this protocol
 * gives it (answer-wire.ts, wire-checks.ts); anything else is passed over.
 */

import { eachAnswer, isAnswers } from './answer-wire.js';
import type { ChangeRecord, Response, Welcome } from './protocol.js';
import { isObject } from './wire-checks.js';

/** What a follower does with what its leader's line carries. */
export interface LineHandlers {
  answer(r: Response): void;
  hear(record: ChangeRecord): void;
  welcome(w: Welcome): void;
  /** The broker does not know the leader (on a port from the broker only). */
  unknown?(): void;
}

/**
 * Reads message `m` from a leader's line: a port from the broker, or the
 * follower's channel. `leader`: the leader the line belongs to (undefined
 * for the channel, where each answer names its leader).
 */
export function readLeaderMessage(m: unknown, leader: string | undefined, h: LineHandlers): void {
  if (isAnswers(m)) eachAnswer(m, leader, h.answer);
  else if (!isObject(m)) return;
  else if (m.t === 'change') h.hear(m.record as ChangeRecord);
  else if (m.t === 'welcome') h.welcome(m as Welcome);
  else if (m.t === 'unknown') h.unknown?.();
}

/**
 * Calls `f` whenever the page is shown again (resumed from a freeze, the
 * back-forward cache, or a hidden tab): a frozen page may have missed
 * change records. Returns how to stop; nothing where there is no document.
 */
export function onResume(f: () => void): () => void {
  const doc = (globalThis as { document?: EventTarget & { visibilityState?: string } }).document;
  if (doc === undefined) return () => {};
  const listener = () => {
    if (doc.visibilityState !== 'hidden') f();
  };
  doc.addEventListener('resume', listener);
  doc.addEventListener('visibilitychange', listener);
  return () => {
    doc.removeEventListener('resume', listener);
    doc.removeEventListener('visibilitychange', listener);
  };
}

/** Asks `worker` to close its database; resolves once it says it has, or after `ms`. */
export function closeWorker(worker: Worker, ms: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    worker.addEventListener('message', (ev: MessageEvent<unknown>) => {
      if (isObject(ev.data) && ev.data.t === 'closed') {
        clearTimeout(timer);
        resolve();
      }
    });
    worker.postMessage({ t: 'close' });
  });
}
