// The minimal postMessage layer a page puts in front of a worker, as an app
// would write it (bench/run/page.mjs): one message each way per call. The
// worker serves one message at a time and answers each, so answers come in
// the order of the calls and need no id; an answer `{ error }` rejects.
// The floor (map-worker.js) and SQLite (sqlite-worker.js) both sit behind it.

/** `call(message)`: posts `message` to `worker`, resolves to its answer. */
export function rpc(worker) {
  const waiting = [];
  worker.onmessage = ({ data }) => {
    const { resolve, reject } = waiting.shift();
    if (data?.error !== undefined) reject(new Error(data.error));
    else resolve(data);
  };
  worker.onerror = (e) => {
    for (const w of waiting.splice(0)) w.reject(new Error(`the worker failed: ${e.message ?? 'it could not load'}`));
  };
  return (message) =>
    new Promise((resolve, reject) => {
      waiting.push({ resolve, reject });
      worker.postMessage(message);
    });
}
