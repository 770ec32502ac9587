/**
 * The worker a `connect()` connection starts once it leads (it holds the
 * database's lead lock): it opens the database, with its Web Lock, and
 * leads (leader.ts),
 * serving its own page through this worker's port and every follower
 * through their channels. Background work and pool top-ups run on this
 * worker's event loop between requests.
 */

import type { Database } from './local/database.js';
import { SiltError } from './core/errors.js';
import { Leader } from './tabs/leader.js';
import type { LockManagerLike } from './core/web-locks.js';
import { openLeader } from './local/open.js';
import { releaseParked } from './opfs/parking.js';
import { names, toWire, type Envelope, type Response, type WorkerControl, type WorkerReport } from './tabs/protocol.js';
import { toWireMessage, type WireAnswer } from './tabs/answer-wire.js';
import { fromWireRequests, type WireRequest } from './tabs/request-wire.js';

interface WorkerScope {
  addEventListener(type: 'message', listener: (event: { data: Envelope | WireRequest[] | WorkerControl }) => void): void;
  postMessage(message: WireAnswer | WireAnswer[] | Response | WorkerReport, transfer?: Transferable[]): void;
  navigator?: { locks?: LockManagerLike };
}
const scope = globalThis as unknown as WorkerScope;

let db: Database | undefined;
let leader: Leader | undefined;
let local = '';

async function start(m: Extract<WorkerControl, { t: 'open' }>): Promise<void> {
  try {
    if (db !== undefined) throw new SiltError('InvalidArgument', 'this worker already has its database open');
    await holdWhileAlive(names(m.name).workerLock(m.leader));
    db = await openLeader(m.name, m.options, () => scope.postMessage({ t: 'locked' }));
    local = m.leader;
    leader = new Leader(db, m.name, m.leader, scope.navigator?.locks);
    leader.addLocal(
      m.leader,
      (r, transfer) => {
        const [message, t] = toWireMessage(r, false, transfer);
        scope.postMessage(message, t);
      },
      (change) => scope.postMessage(change),
    );
    await leader.sweep();
    scope.postMessage({ t: 'opened', seq: db.latestSequence(), opened: leader.opened });
  } catch (e) {
    try {
      db?.close();
    } catch {
      // Reporting the first failure matters more.
    }
    db = undefined;
    leader = undefined;
    scope.postMessage({ t: 'openFailed', error: toWire(e) });
  }
}

/** Takes lock `name` and keeps it until this worker ends (where there are Web Locks). */
function holdWhileAlive(name: string): Promise<void> {
  const locks = scope.navigator?.locks;
  if (locks === undefined) return Promise.resolve();
  return new Promise<void>((held) => {
    locks
      .request(name, {}, () => {
        held();
        return new Promise<void>(() => {});
      })
      .catch(() => held());
  });
}

async function stop(): Promise<void> {
  try {
    await leader?.close();
  } finally {
    if (db !== undefined) {
      const name = db.name;
      try {
        db.close();
      } finally {
        // The page terminates this worker next: parking its files would
        // only delay their release.
        releaseParked(name);
      }
    }
    db = undefined;
    leader = undefined;
    scope.postMessage({ t: 'closed' });
  }
}

scope.addEventListener('message', ({ data }) => {
  if (Array.isArray(data)) {
    if (leader !== undefined) leader.receive(local, data);
    else
      for (const e of [fromWireRequests(data)].flat())
        scope.postMessage({ id: e.id, from: local, ok: false, error: { code: 'Closed', message: 'the database is not open' } });
    return;
  }
  if ('t' in data) {
    if (data.t === 'open') void start(data);
    else if (data.t === 'attach') leader?.attach(data.client, data.port);
    else if (data.t === 'close') void stop();
    else if (data.t === 'ping') scope.postMessage({ t: 'pong' });
    return;
  }
  if (leader === undefined) {
    scope.postMessage({ id: data.id, from: local, ok: false, error: { code: 'Closed', message: 'the database is not open' } });
    return;
  }
  leader.receive(local, data);
});
