/**
 * `siltdb/svelte`: live queries as Svelte stores (issue 39, item 3).
 * `liveStore(db, range)` and `getStore(db, key)` return readable stores
 * (Svelte's store contract, so `$notes` in a component, or `fromStore` in
 * Svelte 5's runes): their value is the query's latest result, `undefined`
 * until the first read, and it changes only when a write (from any tab)
 * changes what the query shows. The query runs while the store has a
 * subscriber (a component that shows it), and reads afresh for the next.
 * `store.error` is a store of why it failed, if it did. Nothing of Svelte is
 * imported: the contract is plain objects and functions.
 *
 * @example
 * const notes = liveStore(db, { gte: 'note:', lt: 'note:~', limit: 50 });
 * // in a component: {#each $notes?.entries ?? [] as [id, note]} ... {/each}
 */

import type { Live, LiveOptions } from './tabs/live-query.js';

export type { Live, LiveOptions, LiveResult, LiveValue } from './tabs/live-query.js';

/** Svelte's readable store contract. */
export interface Readable<T> {
  subscribe(run: (value: T) => void, invalidate?: () => void): () => void;
}

/** A live query's store, and a store of its error. */
export interface LiveStore<T> extends Readable<T | undefined> {
  readonly error: Readable<unknown>;
}

/** A store of `db.live(options)`'s latest result (`LiveResult`: `{ seq, entries }`). */
export function liveStore<T>(db: { live(options: never): Live<T> }, options: LiveOptions<unknown> = {}): LiveStore<T> {
  return storeOf(db.live(options as never));
}

/** A store of `db.liveGet(key)`'s latest result (`LiveValue`: `{ seq, value }`). */
export function getStore<T>(db: { liveGet(key: never): Live<T> }, key: unknown): LiveStore<T> {
  return storeOf(db.liveGet(key as never));
}

function storeOf<T>(live: Live<T>): LiveStore<T> {
  let failure: unknown;
  const failed = new Set<(e: unknown) => void>();
  return {
    subscribe(run) {
      // The contract: the value now, at once, then each change (once each).
      let last = live.current;
      run(last);
      const s = live.subscribe({
        next: (r) => {
          if (r === last) return;
          last = r;
          run(r);
        },
        error: (e) => {
          failure = e;
          for (const f of failed) f(e);
        },
      });
      return () => s.unsubscribe();
    },
    error: {
      subscribe(run) {
        run(failure);
        failed.add(run);
        return () => failed.delete(run);
      },
    },
  };
}
