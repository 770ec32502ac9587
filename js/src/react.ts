/**
 * `siltdb/react`: React hooks over live queries (issue 39, item 3), built on
 * `useSyncExternalStore`. A component that calls `useLive(db, range)` or
 * `useGet(db, key)` renders the query's latest result, and again only when
 * a write (from any tab) changes what its query shows: a write to another
 * key renders nothing. `undefined` until the first read. Each hook
 * subscribes while its component is mounted and unsubscribes when it
 * unmounts (a query nobody listens to holds nothing); StrictMode's mount,
 * unmount and mount again reads afresh. With `{ suspense: true }` a hook
 * suspends until its first result instead of returning `undefined`. The
 * options are compared by value,
 * so an object literal per render is fine; `db` should be one handle for
 * the component's life (a module's, or a context's). A query that fails
 * (its connection failed) throws its error from the hook, for an error
 * boundary. React is a peer dependency: this entry is not part of
 * `siltdb`'s main one.
 *
 * @example
 * const db = await connect('notes', { keyEncoding: 'utf8', valueEncoding: 'json' });
 * function Notes() {
 *   const notes = useLive(db, { gte: 'note:', lt: 'note:~', limit: 50 });
 *   if (notes === undefined) return 'Loading…';
 *   return notes.entries.map(([id, note]) => <Note key={id} note={note} />);
 * }
 */

import { useCallback, useEffect, useMemo, useSyncExternalStore } from 'react';
import type { Live, LiveOptions } from './tabs/live-query.js';

export type { Live, LiveOptions, LiveResult, LiveValue } from './tabs/live-query.js';

/** A query, how it failed if it did, and the first result a suspended render waits for. */
interface Followed<T> {
  live: Live<T>;
  error?: unknown;
  first?: Promise<void>;
}

/** How a hook waits for its first result. */
export interface HookOptions {
  /**
   * Suspend (throw to the nearest `<Suspense>`) until the first result,
   * instead of returning `undefined`: with it, the hook always returns a
   * result. Default false.
   */
  suspense?: boolean;
}

/**
 * The latest result of `db.live(options)` (`LiveResult`: `{ seq, entries }`),
 * or `undefined` until its first read (or with no `db` yet), unless
 * `hook.suspense`.
 */
export function useLive<T>(db: { live(options: never): Live<T> } | undefined, options: LiveOptions<unknown> = {}, hook: HookOptions = {}): T | undefined {
  return useQuery(db, `live ${optionsKey(options)}`, () => db!.live(options as never), hook.suspense === true);
}

/**
 * The latest result of `db.liveGet(key)` (`LiveValue`: `{ seq, value }`),
 * or `undefined` until its first read (or with no `db` yet), unless
 * `hook.suspense`.
 */
export function useGet<T>(db: { liveGet(key: never): Live<T> } | undefined, key: unknown, hook: HookOptions = {}): T | undefined {
  return useQuery(db, `get ${optionsKey(key)}`, () => db!.liveGet(key as never), hook.suspense === true);
}

/**
 * Queries a suspended render made, by handle and key: React keeps no state
 * of a render that suspended, so the render after finds its query here.
 * Dropped once its component mounted and went (a query whose component
 * never mounted keeps only its last result: it stopped after its first).
 */
const suspended = new WeakMap<object, Map<string, Followed<unknown>>>();

function useQuery<T>(db: object | undefined, key: string, make: () => Live<T>, suspense: boolean): T | undefined {
  // biome-ignore lint/correctness/useExhaustiveDependencies: the query by value (`key`), not by identity.
  const followed = useMemo((): Followed<T> | undefined => {
    if (db === undefined) return undefined;
    if (!suspense) return { live: make() };
    let queries = suspended.get(db);
    if (queries === undefined) {
      queries = new Map();
      suspended.set(db, queries);
    }
    let f = queries.get(key) as Followed<T> | undefined;
    if (f === undefined) {
      f = { live: make() };
      queries.set(key, f);
    }
    return f;
  }, [db, key, suspense]);
  useEffect(
    () => () => {
      if (db !== undefined && suspended.get(db)?.get(key) === followed) suspended.get(db)!.delete(key);
    },
    [db, key, followed],
  );
  // A failed query is not kept for the render after an error boundary's reset: that one makes a new one.
  if (followed?.error !== undefined && db !== undefined && suspended.get(db)?.get(key) === followed) suspended.get(db)!.delete(key);
  const current = useFollowed(followed);
  if (suspense && followed !== undefined && current === undefined) throw firstResult(followed);
  return current;
}

/** Resolves once `f` has a result (or failed): a subscription of its own runs the query until then. */
function firstResult<T>(f: Followed<T>): Promise<void> {
  f.first ??= new Promise<void>((resolve) => {
    let done = false;
    let s: { unsubscribe(): void } | undefined;
    const end = () => {
      done = true;
      s?.unsubscribe();
      resolve();
    };
    s = f.live.subscribe({
      next: end,
      error: (e) => {
        f.error = e;
        end();
      },
    });
    if (done) s.unsubscribe();
  });
  return f.first;
}

function useFollowed<T>(followed: Followed<T> | undefined): T | undefined {
  const subscribe = useCallback(
    (onChange: () => void) => {
      if (followed === undefined) return () => {};
      const s = followed.live.subscribe({
        next: onChange,
        error: (e) => {
          followed.error = e;
          onChange();
        },
      });
      return () => s.unsubscribe();
    },
    [followed],
  );
  // A failed query's snapshot is the query itself: another value than its
  // last result, so that React renders again, and the render throws.
  const current = useSyncExternalStore(
    subscribe,
    () => (followed?.error !== undefined ? (followed as unknown as T) : followed?.live.current),
    () => undefined,
  );
  if (followed?.error !== undefined) throw followed.error;
  return current;
}

/** Options (or a key) as a string, equal for equal values: bytes by their contents. */
function optionsKey(value: unknown): string {
  return JSON.stringify(value, (_, v: unknown) => (v instanceof Uint8Array ? { bytes: Array.from(v) } : v)) ?? 'undefined';
}
