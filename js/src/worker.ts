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
import { LEADER_WORKER_NAME, names, PROTOCOL, toWire, versionOf, type Response, type WorkerControl, type WorkerReport } from './tabs/protocol.js';
import { toWireMessage, type WireAnswer } from './tabs/answer-wire.js';
import { readRequests } from './tabs/leader-inbox.js';
import { loadWasm, provideModule } from './boundary/wasm.js';
import { markStage } from './core/marks.js';

interface WorkerScope {
  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void;
  postMessage(message: WireAnswer | WireAnswer[] | Response | WorkerReport, transfer?: Transferable[]): void;
  navigator?: { locks?: LockManagerLike };
}
const scope = globalThis as unknown as WorkerScope;

// A worker its connection started gets the module its page compiled
// meanwhile (tabs/worker-start.ts), before `open`. Any other (given with
// `worker`) loads at once, not when the page's `open` comes: the module
// compiles while the page still asks for its locks and posts `open`
// (docs/bench/page.md: about 5 ms sooner to the first value). A failure is
// the open's to report (loadWasm tries again then).
markStage('worker');
if ((globalThis as { name?: unknown }).name !== LEADER_WORKER_NAME) loadWasm().catch(() => {});

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
    markStage('leading');
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
  if (typeof data !== 'object' || data === null) return;
  if (!Array.isArray(data) && typeof (data as { t?: unknown }).t === 'string') {
    const m = data as WorkerControl;
    if (m.t === 'wasm') {
      if (m.module instanceof WebAssembly.Module) provideModule(m.module);
      loadWasm().catch(() => {});
    } else if (m.t === 'open') {
      if (versionOf(m) === PROTOCOL) void start(m);
      else scope.postMessage({ t: 'openFailed', error: toWire(workerOfAnotherVersion(versionOf(m))) });
    } else if (m.t === 'attach') leader?.attach(m.client, m.port, versionOf(m));
    else if (m.t === 'close') void stop();
    else if (m.t === 'ping') scope.postMessage({ t: 'pong' });
    return;
  }
  if (leader !== undefined) {
    leader.receive(local, data);
    return;
  }
  // Not open: each request that names its id is told so.
  for (const item of readRequests(data, PROTOCOL).items) {
    const id = 'refused' in item ? item.refused : item.id;
    scope.postMessage({ id, from: local, ok: false, error: { code: 'Closed', message: 'the database is not open' } });
  }
});

/** The page that started this worker runs another siltdb than this script (a worker.js of another deploy, from a cache). */
function workerOfAnotherVersion(v: number): SiltError {
  return new SiltError(
    'VersionMismatch',
    `siltdb's worker script speaks tab protocol ${PROTOCOL} and the page that started it ${v}: the page and worker.js come from different versions of the site (a cache?); reload the page`,
  );
}
