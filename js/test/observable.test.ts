// A live query is an Observable as RxJS takes it (issue 39, item 2): `from(live)`
// finds its '@@observable', subscribes a Subscriber (whose methods are on its
// prototype) and gets each result; operators compose; unsubscribing the
// RxJS subscription unsubscribes the query (no watch left).
import { from, map } from 'rxjs';
import { describe, expect, test, vi } from 'vitest';
import { Database, openMemory } from '../src/index.js';

const tick = () => new Promise((r) => setTimeout(r, 0));

describe('RxJS', () => {
  test('from(db.live()) gets each result through operators; unsubscribe leaves no watch', async () => {
    const db = await openMemory<string, string>({ keyEncoding: 'utf8', valueEncoding: 'utf8' });
    db.put('a', '1');
    const seen: string[] = [];
    const live = db.live({ gte: 'a', lt: 'b~' });
    // (Taken as an Observable, not as the async iterable it also is.)
    const interop = vi.spyOn(live as unknown as Record<string, () => unknown>, '@@observable');
    const sub = from(live)
      .pipe(map((r) => r.entries.map(([k, v]) => `${k}=${v}`).join(' ')))
      .subscribe((s) => seen.push(s));
    await tick();
    db.put('b', '2');
    await tick();
    db.put('z', 'outside');
    await tick();
    expect(seen).toEqual(['a=1', 'a=1 b=2']);
    expect(interop).toHaveBeenCalledTimes(1);
    expect(Database.internals(db as Database<unknown, unknown>).watches()).toBe(1);
    sub.unsubscribe();
    expect(Database.internals(db as Database<unknown, unknown>).watches()).toBe(0);
    db.close();
  });
});
