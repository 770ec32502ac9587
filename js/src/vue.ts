/**
 * `siltdb/vue`: Vue composables over live queries (issue 39, item 3).
 * `useLive(db, range)` and `useGet(db, key)` return refs (`data`: the
 * query's latest result, `undefined` until the first read; `error`: why it
 * failed, if it did) that change only when a write (from any tab) changes
 * what the query shows. The range (or key) may be a ref or a getter: when
 * its value changes, the query is made again. The query ends with the
 * component (or effect scope) that made it. Vue is an optional peer
 * dependency: this entry is not part of `siltdb`'s main one.
 *
 * @example
 * const { data: notes } = useLive(db, () => ({ gte: prefix.value, lt: `${prefix.value}~`, limit: 50 }));
 */

import { type MaybeRefOrGetter, onScopeDispose, type ShallowRef, shallowRef, toValue, watch } from 'vue';
import type { Live, LiveOptions } from './tabs/live-query.js';

export type { Live, LiveOptions, LiveResult, LiveValue } from './tabs/live-query.js';

/** What a composable returns: the latest result, and why the query failed. */
export interface LiveRefs<T> {
  data: Readonly<ShallowRef<T | undefined>>;
  error: Readonly<ShallowRef<unknown>>;
}

/** The latest result of `db.live(options)` (`LiveResult`: `{ seq, entries }`) as a ref. */
export function useLive<T>(db: { live(options: never): Live<T> }, options: MaybeRefOrGetter<LiveOptions<unknown>> = {}): LiveRefs<T> {
  return follow(
    () => toValue(options),
    (o) => db.live(o as never),
  );
}

/** The latest result of `db.liveGet(key)` (`LiveValue`: `{ seq, value }`) as a ref. */
export function useGet<T>(db: { liveGet(key: never): Live<T> }, key: MaybeRefOrGetter<unknown>): LiveRefs<T> {
  return follow(
    () => toValue(key),
    (k) => db.liveGet(k as never),
  );
}

function follow<T>(source: () => unknown, make: (value: unknown) => Live<T>): LiveRefs<T> {
  const data = shallowRef<T>();
  const error = shallowRef<unknown>();
  let unsubscribe: (() => void) | undefined;
  const stop = watch(
    () => optionsKey(source()),
    () => {
      unsubscribe?.();
      unsubscribe = undefined;
      // Another range: nothing of the last one's result stays shown.
      data.value = undefined;
      error.value = undefined;
      try {
        const s = make(source()).subscribe({
          next: (r) => {
            data.value = r;
          },
          error: (e) => {
            error.value = e;
          },
        });
        unsubscribe = () => s.unsubscribe();
      } catch (e) {
        // Options it refuses (a misspelled one, say), or a closed database.
        error.value = e;
      }
    },
    { immediate: true },
  );
  onScopeDispose(() => {
    stop();
    unsubscribe?.();
  });
  return { data, error };
}

/** Options (or a key) as a string, equal for equal values: bytes by their contents. */
function optionsKey(value: unknown): string {
  return JSON.stringify(value, (_, v: unknown) => (v instanceof Uint8Array ? { bytes: Array.from(v) } : v)) ?? 'undefined';
}
