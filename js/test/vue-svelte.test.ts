// siltdb/vue and siltdb/svelte (src/vue.ts, src/svelte.ts; issue 39 item 3)
// with Vue's reactivity and Svelte's stores from npm, on a worker's
// database: a composable's refs and a store's value follow the writes that
// change what their query shows, and only those; a reactive range makes the
// query again; the scope's end (or the last unsubscribe) leaves no watch.
// Components in a browser: tests/e2e/frameworks.spec.ts.
import { derived, get } from 'svelte/store';
import { describe, expect, test } from 'vitest';
import { effectScope, nextTick, ref } from 'vue';
import { Database, type LiveResult, type LiveValue, openMemory } from '../src/index.js';
import { getStore, liveStore } from '../src/svelte.js';
import { useGet, useLive } from '../src/vue.js';

const tick = () => new Promise((r) => setTimeout(r, 0));
const text = (b: Uint8Array | undefined) => (b === undefined ? '-' : new TextDecoder().decode(b));
const shown = (r: LiveResult<Uint8Array, Uint8Array> | undefined) => r?.entries.map(([k, v]) => `${text(k)}=${text(v)}`).join(' ');
const watches = (db: unknown) => Database.internals(db as Database<unknown, unknown>).watches();

describe('siltdb/vue', () => {
  test('useLive and useGet: refs that follow the writes; a reactive range makes the query again; the scope ends it', async () => {
    const db = await openMemory<string, string>({ keyEncoding: 'utf8', valueEncoding: 'utf8' });
    db.put('a', 'A');
    db.put('b', 'B');
    const from = ref('a');
    const scope = effectScope();
    const { list, one } = scope.run(() => ({
      list: useLive(db, () => ({ gte: from.value, limit: 2 })),
      one: useGet(db, 'b'),
    }))!;
    expect(list.data.value).toBeUndefined();
    await tick();
    expect(list.data.value?.entries).toEqual([
      ['a', 'A'],
      ['b', 'B'],
    ]);
    expect((one.data.value as LiveValue<string> | undefined)?.value).toBe('B');
    db.put('b', 'B2');
    await tick();
    expect(list.data.value?.entries.map(([k, v]) => `${k}=${v}`)).toEqual(['a=A', 'b=B2']);
    expect((one.data.value as LiveValue<string> | undefined)?.value).toBe('B2');
    from.value = 'b';
    await nextTick();
    // Another range: the last one's result is not shown meanwhile.
    expect(list.data.value).toBeUndefined();
    await tick();
    expect(list.data.value?.entries.map(([k, v]) => `${k}=${v}`)).toEqual(['b=B2']);
    expect(watches(db)).toBe(2);
    expect(list.error.value).toBeUndefined();
    // Options it refuses: the error ref says so.
    const bad = scope.run(() => useLive(db, { limt: 2 } as never))!;
    expect(String(bad.error.value)).toMatch(/limt/);
    scope.stop();
    expect(watches(db)).toBe(0);
    db.close();
  });
});

describe('siltdb/svelte', () => {
  test('liveStore and getStore keep the store contract: the value at once, then each change once; svelte/store derives from them; the last unsubscribe leaves no watch', async () => {
    const db = await openMemory();
    db.put('k1', new TextEncoder().encode('one'));
    const list = liveStore(db, { gte: 'k', lt: 'l' });
    const seen: (string | undefined)[] = [];
    const stop = list.subscribe((v) => seen.push(shown(v)));
    expect(seen).toEqual([undefined]); // at once, as the contract says: nothing read yet
    await tick();
    expect(seen).toEqual([undefined, 'k1=one']);
    const count = derived(list, (r) => r?.entries.length ?? 0);
    expect(get(count)).toBe(1);
    db.put('k2', new TextEncoder().encode('two'));
    db.put('m', new TextEncoder().encode('outside'));
    await tick();
    expect(seen).toEqual([undefined, 'k1=one', 'k1=one k2=two']);
    expect(get(count)).toBe(2);
    const one = getStore(db, 'k2');
    const values: string[] = [];
    const stopOne = one.subscribe((v) => values.push(v === undefined ? 'loading' : text((v as LiveValue<Uint8Array>).value)));
    await tick();
    expect(values).toEqual(['loading', 'two']);
    expect(get(list.error)).toBeUndefined();
    stop();
    stopOne();
    expect(watches(db)).toBe(0);
    db.close();
  });
});
