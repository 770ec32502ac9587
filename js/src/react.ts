/**
 * `siltdb/react`: React hooks over live queries (issue 39, item 3), built on
 * `useSyncExternalStore`. A component that calls `useLive(db, range)` or
 * `useGet(db, key)` renders the query's latest result, and again only when
 * a write (from any tab) changes what its query shows: a write to another
 * key renders nothing. `undefined` until the first read. Each hook
 * subscribes while its component is mounted and unsubscribes when it
 * unmounts (a query nobody listens to holds nothing); StrictMode's mount,
 * unmount and mount again reads afresh. The options are compared by value,
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

import { useCallback, useMemo, useSyncExternalStore } from 'react';
import type { Live, LiveOptions } from './tabs/live-query.js';

export type { Live, LiveOptions, LiveResult, LiveValue } from './tabs/live-query.js';

/** A query and how it failed, if it did. */
interface Followed<T> {
  live: Live<T>;
  error?: unknown;
}

/**
 * The latest result of `db.live(options)` (`LiveResult`: `{ seq, entries }`),
 * or `undefined` until its first read (or with no `db` yet).
 */
export function useLive<T>(db: { live(options: never): Live<T> } | undefined, options: LiveOptions<unknown> = {}): T | undefined {
  const key = optionsKey(options);
  // biome-ignore lint/correctness/useExhaustiveDependencies: the options by value (`key`), not by identity.
  const followed = useMemo(() => (db === undefined ? undefined : { live: db.live(options as never) }), [db, key]);
  return useFollowed(followed);
}

/**
 * The latest result of `db.liveGet(key)` (`LiveValue`: `{ seq, value }`),
 * or `undefined` until its first read (or with no `db` yet).
 */
export function useGet<T>(db: { liveGet(key: never): Live<T> } | undefined, key: unknown): T | undefined {
  const k = optionsKey(key);
  // biome-ignore lint/correctness/useExhaustiveDependencies: the key by value (`k`), not by identity.
  const followed = useMemo(() => (db === undefined ? undefined : { live: db.liveGet(key as never) }), [db, k]);
  return useFollowed(followed);
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
  const current = useSyncExternalStore(
    subscribe,
    () => followed?.live.current,
    () => undefined,
  );
  if (followed?.error !== undefined) throw followed.error;
  return current;
}

/** Options (or a key) as a string, equal for equal values: bytes by their contents. */
function optionsKey(value: unknown): string {
  return JSON.stringify(value, (_, v: unknown) => (v instanceof Uint8Array ? { bytes: Array.from(v) } : v)) ?? 'undefined';
}
