/**
 * Starting a leader's worker (issue 34, item 5: from `connect()` to the
 * first value as short as the platform allows). The worker's start (its
 * scripts) and the WebAssembly module's fetch and compile ran one after
 * the other: the worker began loading the module once its scripts ran. Now
 * the page compiles the module (streaming, off its main thread) as the
 * worker starts, and posts it; the worker instantiates it and fetches and
 * compiles nothing itself. Measured in Chromium on a return visit, 24
 * interleaved visits each (`profile-cold.mjs`, 2 cores): 84.0 ms from
 * `connect()` to the first value against 93.1. (Starting the worker before
 * the election ended, where no connection leads, measured no faster on
 * top of it: 84.6 ms; it is not done.)
 *
 * `open` goes to the worker after the module, or after word that none
 * comes (it could not be compiled or posted here): the worker then loads
 * its own, as a worker given with `worker` does.
 */

import { SiltError } from '../core/errors.js';
import { compileLeaderWasm, startLeaderWorker } from '../spawn.js';
import type { WorkerControl } from './protocol.js';

let compiled: Promise<WebAssembly.Module | undefined> | undefined;

/** This realm's compiled module (compiled once), or undefined where it could not be compiled here. */
function pageModule(): Promise<WebAssembly.Module | undefined> {
  compiled ??= compileLeaderWasm().catch(() => {
    compiled = undefined; // a later worker may try again (a network error)
    return undefined;
  });
  return compiled;
}

/** A leader's worker started by this page, and when the module went to it (what `new Worker` throws, this throws). */
export function startWorker(): { worker: Worker; modulePosted: Promise<void> } {
  const worker = startLeaderWorker();
  const modulePosted = pageModule().then((module) => {
    try {
      worker.postMessage({ t: 'wasm', module } satisfies WorkerControl);
    } catch {
      // A module this browser cannot post to a worker: it loads its own.
      worker.postMessage({ t: 'wasm' } satisfies WorkerControl);
    }
  });
  return { worker, modulePosted };
}

/**
 * Posts `open` to a leading connection's `worker`: after its module if this
 * page started it (`modulePosted`), at once to one given; not if
 * `current()` no longer holds (the connection went or has another worker).
 * `fail` takes why the options cannot be posted.
 */
export function sendOpen(
  worker: Worker,
  modulePosted: Promise<void> | undefined,
  open: WorkerControl,
  current: () => boolean,
  fail: (e: SiltError) => void,
): void {
  const send = () => {
    if (!current()) return;
    try {
      worker.postMessage(open);
    } catch (e) {
      fail(new SiltError('InvalidArgument', `the options cannot be sent to the database's worker: ${String(e)}`, { cause: e }));
    }
  };
  if (modulePosted === undefined) send();
  else void modulePosted.then(send, send);
}
