/**
 * The origin's storage as the browser accounts for it: persistence
 * (`navigator.storage.persist()` / `persisted()`) and the usage and quota
 * of `navigator.storage.estimate()`, which `statistics()` reports.
 *
 * Where the Storage API is missing (Node, old browsers) nothing here throws:
 * `persist()` and `persisted()` resolve to false and statistics carry no
 * `storage` field.
 */

/** What `statistics().storage` reports. */
export interface StorageEstimate {
  /** Bytes the origin uses (every database and everything else it stores). */
  usage: number;
  /** Bytes the browser lets the origin use. */
  quota: number;
  /** Whether the origin's storage is persistent (not evicted under pressure). */
  persisted: boolean;
  /** When this estimate was taken (`Date.now()`). */
  updatedAt: number;
}

interface StorageManagerLike {
  persist?: () => Promise<boolean>;
  persisted?: () => Promise<boolean>;
  estimate?: () => Promise<{ usage?: number; quota?: number }>;
}

function manager(): StorageManagerLike | undefined {
  const nav = (globalThis as { navigator?: { storage?: StorageManagerLike } }).navigator;
  return nav?.storage;
}

/**
 * Asks the browser to make this origin's storage persistent, so that it is
 * not evicted when the device runs short of space. Resolves to whether it
 * is persistent afterwards. The browser decides, often without asking the
 * user (Chromium grants it to sites with enough engagement, or installed
 * ones). Resolves to false where the Storage API is missing, and in a
 * worker, where browsers do not offer `persist()`; never rejects.
 */
export async function persist(): Promise<boolean> {
  const m = manager();
  if (typeof m?.persist !== 'function') return false;
  try {
    const granted = await m.persist();
    cached = undefined; // the next statistics() shows the new state
    return granted === true;
  } catch {
    return false;
  }
}

/** Whether this origin's storage is persistent; false where unknown. Never rejects. */
export async function persisted(): Promise<boolean> {
  const m = manager();
  if (typeof m?.persisted !== 'function') return false;
  try {
    return (await m.persisted()) === true;
  } catch {
    return false;
  }
}

/** How old a cached estimate may be before `storageEstimate()` starts a refresh. */
const MAX_AGE_MS = 1_000;

let cached: StorageEstimate | undefined;
let refreshing: Promise<StorageEstimate | undefined> | undefined;

/**
 * Takes a new estimate (`estimate()` and `persisted()`), caches it and
 * resolves to it; `undefined` where the Storage API has no `estimate()` or
 * it failed. Concurrent calls share one request.
 */
export function refreshStorageEstimate(): Promise<StorageEstimate | undefined> {
  const m = manager();
  if (typeof m?.estimate !== 'function') return Promise.resolve(undefined);
  const estimate = m.estimate.bind(m);
  if (refreshing === undefined) {
    const request = (async () => {
      try {
        const [e, p] = await Promise.all([estimate(), persisted()]);
        cached = { usage: e.usage ?? 0, quota: e.quota ?? 0, persisted: p, updatedAt: Date.now() };
      } catch {
        // Keep the last estimate; statistics() shows how old it is.
      }
      return cached;
    })();
    refreshing = request;
    // Cleared once settled (also when estimate() threw at once, before
    // the assignment above could have been undone by the request itself).
    void request.finally(() => {
      if (refreshing === request) refreshing = undefined;
    });
  }
  return refreshing;
}

/**
 * The latest estimate, synchronously, for `Database.statistics()`: it is
 * at most about a second old while statistics are asked for regularly,
 * since a call that finds it older starts a refresh in the background (the
 * call itself returns the older one; `updatedAt` says when it was taken).
 * `undefined` until the first estimate arrives.
 */
export function storageEstimate(): StorageEstimate | undefined {
  if (cached === undefined || Date.now() - cached.updatedAt > MAX_AGE_MS) {
    refreshStorageEstimate().catch(() => {});
  }
  return cached;
}
