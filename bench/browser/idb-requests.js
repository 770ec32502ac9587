// IndexedDB's requests and transactions as promises, for the bench workers
// that use IndexedDB itself (storage-worker.js, bytes-worker.js).

/** The result of IndexedDB request `r`. */
export function request(r) {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
}

/** Resolves when transaction `tx` completes; rejects if it aborts. */
export function done(tx) {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onabort = () => reject(tx.error ?? new Error('aborted'));
  });
}
