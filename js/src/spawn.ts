/**
 * The two workers a `connect()` connection starts: siltdb's own worker
 * (worker.ts), once it leads, with the WebAssembly module it compiled for
 * it (tabs/worker-start.ts), and the SharedWorker that hands out ports
 * (broker.ts).
 *
 * This file stays at the root of the package, beside those two, because
 * their URLs are relative to the file that builds them
 * (`new URL('./worker.js', import.meta.url)`). Browsers, Vite and webpack
 * resolve that from here; esbuild leaves it alone, so in an esbuild bundle
 * it resolves next to the app's bundle, where the plugin (esbuild.ts) puts
 * `worker.js` and `broker.js`. Only a URL without a folder in it works for
 * both: moved into tabs/, this file would need `../worker.js`, which the
 * esbuild bundle would look for above its `outdir`.
 */

import type { BrokerMessage } from './tabs/protocol.js';

/**
 * Starts siltdb's worker, which opens the database and leads. Written out
 * as `new Worker(new URL(...))`, the pattern bundlers recognise to bundle
 * worker.js as a worker of its own.
 */
export function startLeaderWorker(): Worker {
  // The name is protocol.ts's LEADER_WORKER_NAME (a literal here, which
  // bundlers need to read the options): it tells the worker that this page
  // posts it the compiled module.
  return new Worker(new URL('./worker.js', import.meta.url), { type: 'module', name: 'siltdb' });
}

/**
 * Compiles siltdb's WebAssembly module on this page (off its main thread:
 * streaming compilation), for the worker it starts: from the same file the
 * glue loads (`silt_wasm_bg.wasm` beside siltdb's bundles; written out as
 * `new URL(...)`, which bundlers resolve as an asset, as they do the glue's).
 */
export async function compileLeaderWasm(): Promise<WebAssembly.Module> {
  const url = new URL('./silt_wasm_bg.wasm', import.meta.url);
  return WebAssembly.compileStreaming(fetch(url));
}

/**
 * This realm's port to the broker, which introduces followers to the
 * leader's worker with a MessagePort (measured about three times faster
 * than a BroadcastChannel); `onError` when the SharedWorker fails.
 * `undefined` where there is no SharedWorker, or a bundler did not ship
 * broker.js: the channel it is then. Written out as
 * `new SharedWorker(new URL(...))`, the pattern bundlers recognise to
 * bundle broker.js as a worker of its own.
 */
export function connectToBroker(onMessage: (m: BrokerMessage) => void, onError: () => void): MessagePort | undefined {
  if (typeof SharedWorker !== 'function') return undefined;
  try {
    // Named by the tab protocol (`PROTOCOL`, protocol.ts; a literal, which
    // bundlers need to read the options): a page never shares a broker with a
    // siltdb of another version, which would pass on what it does not know of.
    const shared = new SharedWorker(new URL('./broker.js', import.meta.url), { type: 'module', name: 'siltdb-broker-4' });
    shared.addEventListener('error', onError);
    shared.port.addEventListener('message', (ev: MessageEvent<BrokerMessage>) => onMessage(ev.data));
    shared.port.start();
    return shared.port;
  } catch {
    return undefined;
  }
}
