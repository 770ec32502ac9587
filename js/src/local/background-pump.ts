/**
 * A worker's background work: the engine's flushes and compactions, run
 * between calls in short slices (`BackgroundPump`), or until they have
 * caught up (`idle`); and, once no write has come for a while, the
 * engine's read-optimising idle compaction.
 */

import type { Database as WasmDatabase } from '../../pkg/silt_wasm.js';
import { contract, type Recovery } from '../boundary/contract.js';
import { fromWasm, SiltError } from '../core/errors.js';
import { nextTask } from '../core/task.js';
import type { PoolKeeper } from '../opfs/pool.js';

/**
 * Idle checks after a run of writes: one that finds other work due (a
 * compaction the reads called for) looks again an `idleMs` later, this
 * many times at most.
 */
const IDLE_CHECKS = 3;

/** Failed steps in a row (that may be retried) before `idle()` gives up. */
const IDLE_RETRY_ATTEMPTS = 3;

/** Retrying background work that failed and may be retried: first and longest waits. */
const RETRY_MS = 50;
const RETRY_MAX_MS = 2_000;

/**
 * What the engine decided a failed step of background work means (the
 * binding puts it on the error it throws; crates/wasm/src/error.rs):
 * `stopWrites` for anything else, such as a closed database.
 */
function recoveryOf(e: unknown): Recovery {
  const r = (e as { recovery?: unknown } | null)?.recovery;
  return r === 'retryLater' || r === 'failAlone' ? r : 'stopWrites';
}

/**
 * Runs the engine's background work (flushes, later compactions) in short
 * slices on the event loop, so that requests queued meanwhile run between
 * slices and are never starved.
 */
export class BackgroundPump {
  #inner: WasmDatabase;
  #keeper: PoolKeeper | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** A run is scheduled (by a timer or for the next task), due at `#due`. */
  #scheduled = false;
  /** Bumped to cancel a scheduled run. */
  #token = 0;
  #due = 0;
  #stopped = false;
  /** Background work stopped writes: nothing more is pumped. */
  #failed = false;
  #retryMs = RETRY_MS;
  /** Writes made (`wrote`): an idle timer set before the last one is set again. */
  #writes = 0;
  /** Idle checks left before the next write (a database just opened counts as written). */
  #idleChecks = IDLE_CHECKS;
  #idleTimer: ReturnType<typeof setTimeout> | undefined;
  steps = 0;
  /** Idle compactions this pump started. */
  idleCompactions = 0;
  lastError: SiltError | undefined;
  static sliceMs = 4;
  static budget = 8;
  /**
   * Milliseconds without a write after which, once background work has
   * caught up, the engine may start a read-optimising compaction
   * (`startIdleCompaction`: what lies above the last level compacted into
   * it, so that a get probes one table). Reads do not count: the
   * compaction runs in the same short slices as all background work, and
   * a read waits at most one.
   */
  static idleMs = 1_000;

  constructor(inner: WasmDatabase, keeper: PoolKeeper | undefined) {
    this.#inner = inner;
    this.#keeper = keeper;
  }

  /**
   * Runs background work after `delayMs`, or sooner if already scheduled
   * later. At 0, in the next task (`nextTask`: a chain of `setTimeout(0)`
   * would be clamped to 4 ms a step, leaving the worker idle half the time
   * while work is left).
   */
  kick(delayMs = 0): void {
    if (this.#stopped || this.#failed) return;
    const at = performance.now() + delayMs;
    if (this.#scheduled) {
      if (this.#due <= at) return;
      this.#cancel();
    }
    this.#due = at;
    this.#scheduled = true;
    const token = this.#token;
    const run = () => {
      if (token === this.#token) this.#run();
    };
    if (delayMs <= 0) void nextTask().then(run);
    else this.#timer = setTimeout(run, delayMs);
  }

  /** Forgets the scheduled run. */
  #cancel(): void {
    this.#token++;
    this.#scheduled = false;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  stop(): void {
    this.#stopped = true;
    this.#cancel();
    clearTimeout(this.#idleTimer);
    this.#idleTimer = undefined;
  }

  /**
   * A write was made: background work in the next task if the engine has
   * any due (the write filled a memtable, or a compaction is wanted or
   * under way), and the idle clock starts again. Most writes find none,
   * and cost no task: a step run after every write (a message to post, a
   * task, a call that found nothing to do) took the worker's time from
   * the requests that came next (bench/run/profile-page.mjs --op put).
   */
  wrote(): void {
    this.#writes++;
    this.#idleChecks = IDLE_CHECKS;
    // (True once closed: the step reports it.)
    if (this.#inner.backgroundDue()) this.kick();
    else this.#armIdle();
  }

  /**
   * Looks for idle work once no write has come for `idleMs` (timers only,
   * no clock: a write since the timer was set sets it again).
   */
  #armIdle(): void {
    if (this.#stopped || this.#failed || this.#idleChecks === 0 || this.#idleTimer !== undefined) return;
    const writes = this.#writes;
    this.#idleTimer = setTimeout(() => {
      this.#idleTimer = undefined;
      if (this.#writes !== writes)
        this.#armIdle(); // written meanwhile: idle from the last write on
      else this.#idle();
    }, BackgroundPump.idleMs);
  }

  #idle(): void {
    if (this.#stopped || this.#failed || this.#scheduled) return; // a run under way arms it again
    this.#idleChecks--;
    let started: boolean;
    try {
      started = this.#inner.startIdleCompaction();
    } catch {
      return; // closed, or background work failed: the next call says so
    }
    if (started) {
      this.#idleChecks = 0;
      this.idleCompactions++;
      this.kick();
    } else {
      this.#armIdle(); // other work due, or nothing to do: looked at again, a few times
    }
  }

  #run(): void {
    this.#scheduled = false;
    this.#timer = undefined;
    if (this.#stopped) return;
    const { workLeft, waitingForPool } = contract().work;
    const end = performance.now() + BackgroundPump.sliceMs;
    let bits = 0;
    try {
      do {
        bits = this.#inner.backgroundWork(BackgroundPump.budget);
        this.steps++;
      } while (bits & workLeft && !(bits & waitingForPool) && performance.now() < end);
    } catch (e) {
      this.lastError = fromWasm(e);
      if (recoveryOf(e) === 'stopWrites') {
        // Every later write reports the error: keep it for statistics()
        // and stop pumping.
        this.#failed = true;
        return;
      }
      // The engine kept the work (a file it could not create) or dropped
      // it for lack of space, and redoes it at a later step.
      this.#retryLater();
      return;
    }
    this.lastError = undefined;
    if (bits & waitingForPool && this.#keeper) {
      this.#keeper.topUp().then(
        () => {
          this.#retryMs = RETRY_MS;
          this.kick();
        },
        (e: unknown) => {
          // Storage refused new files (a full quota, often for a moment):
          // as the engine's "no file yet", retried later, never given up.
          this.lastError = fromWasm(e);
          this.#retryLater();
        },
      );
    } else {
      this.#retryMs = RETRY_MS;
      if (bits & workLeft) this.kick();
      else this.#armIdle();
    }
  }

  /** Runs again later, less and less often until it goes through (a write's kick retries at once). */
  #retryLater(): void {
    this.kick(this.#retryMs);
    this.#retryMs = Math.min(this.#retryMs * 2, RETRY_MAX_MS);
  }

  /**
   * Runs background work until it has caught up and the file pool is
   * topped up (`Database.idle`).
   */
  async idle(): Promise<void> {
    const { workLeft, waitingForPool } = contract().work;
    let failures = 0;
    for (;;) {
      if (this.#inner.isClosed) return;
      await this.#keeper?.topUp();
      let bits: number;
      try {
        bits = this.#inner.backgroundWork(BackgroundPump.budget);
        failures = 0;
      } catch (e) {
        // A step that may be retried: out of space, the engine drops the
        // flush or compaction and the next step does the next job (a
        // compaction started before a delete gives way to the one that
        // drops the deleted data); a file it could not create, it keeps.
        // Failing three times in a row means that no job goes through.
        if (recoveryOf(e) === 'stopWrites' || ++failures >= IDLE_RETRY_ATTEMPTS) throw fromWasm(e);
        await nextTask();
        continue;
      }
      if (!(bits & workLeft)) return;
      if (bits & waitingForPool) {
        // The keeper always keeps enough free files for a step; if a step
        // still waits, the top-up failed (kept in lastError).
        if (this.#keeper?.lastError) throw this.#keeper.lastError;
        throw new SiltError('PoolExhausted', 'background work is waiting for free pooled files that the pool keeper did not provide');
      }
      await nextTask();
    }
  }
}
