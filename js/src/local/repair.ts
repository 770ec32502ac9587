/**
 * `repairDatabase`: a database that no longer opens (a damaged table, a
 * lost manifest) rebuilt from what of it still reads, under its lock.
 */

import { fromWasm } from '../core/errors.js';
import { acquireLock } from '../opfs/lock.js';
import { PoolKeeper } from '../opfs/pool.js';
import { realmHandles, UNCOUNTED } from '../opfs/handle-budget.js';
import type { IdbDirectory } from '../idb/idb-directory.js';
import { loadWasm } from '../boundary/wasm.js';
import { browserStorage, directoryOf, domCall, ENGINE_DIR, onBrowserStorage, type StorageEnv } from './open.js';
import { checkName, checkOptions, DEFAULT_HANDLE_BUDGET, DEFAULT_POOL_RESERVE, type OpenOptions, REPAIR_OPTIONS, toWasm } from './options.js';

/** What `repairDatabase` salvaged and lost. */
export interface RepairReport {
  /** Table files read whole. */
  tablesIntact: number;
  /** Table files with blocks that failed their checksum (their other blocks kept). */
  tablesDamaged: number;
  /** Table files that could not be read at all: their data is lost. */
  tablesLost: number;
  /** Data blocks left out because they failed their checksum. */
  blocksLost: number;
  /** Log records replayed. */
  walRecords: number;
  /** Logs that ended in damage (records after it are lost). */
  walsDamaged: number;
  /** Versions of keys in the rebuilt database. */
  entries: number;
  rangeDeletions: number;
  /** What went wrong where, one line per damaged file. */
  problems: string[];
}

/**
 * Rebuilds database `name` from whatever of it is intact, in this worker,
 * when `open()` fails with `Corruption` or `ChecksumMismatch`: every table
 * file and log is read, damaged blocks and records are left out, and the
 * rest becomes a database `open()` opens. The database must not be open
 * anywhere (its Web Lock is taken; `wait` and `handleBudget` as for `open()`). Returns what was
 * salvaged and what was lost. Export what you can first if the data
 * matters: a repair keeps only what it can read.
 */
export async function repairDatabase(name: string, options: Pick<OpenOptions, 'wait' | 'signal' | 'handleBudget'> = {}): Promise<RepairReport> {
  const storage = browserStorage();
  const root = await domCall('opening the origin private file system', () => storage.rootDirectory());
  return onBrowserStorage(name, 'auto', storage, root, (env) => repairOn(env, name, options));
}

/** @internal `repairDatabase` on the given storage (the Node tests use fakes). */
export async function repairOn(env: StorageEnv, name: string, options: Pick<OpenOptions, 'wait' | 'signal' | 'handleBudget'> = {}): Promise<RepairReport> {
  checkName(name);
  const { engine, o } = checkOptions(options, 'repairDatabase()', REPAIR_OPTIONS);
  await loadWasm();
  const lock = await acquireLock(env.locks, name, o.wait ?? false, o.signal);
  let keeper: PoolKeeper | undefined;
  try {
    const dir = await directoryOf(env, name, false, 'there is nothing to repair: check the name');
    keeper = await PoolKeeper.open(dir, DEFAULT_POOL_RESERVE, {
      handles: env.kind === 'indexeddb' ? UNCOUNTED : realmHandles(env.locks),
      limit: o.handleBudget ?? DEFAULT_HANDLE_BUDGET,
      what: `repairing database "${name}"`,
    });
    let report: RepairReport;
    try {
      report = keeper.pool.repair(ENGINE_DIR, toWasm(engine)) as RepairReport;
    } catch (e) {
      throw fromWasm(e);
    }
    // Kept in IndexedDB: committed there before the lock goes.
    if (env.kind === 'indexeddb') await (dir as unknown as IdbDirectory).persisted();
    return report;
  } finally {
    keeper?.close();
    lock.release();
  }
}
