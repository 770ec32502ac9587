// What the many-tabs specs share (tabs.spec.ts, tabs-failover.spec.ts,
// tabs-transactions.spec.ts): a tab connected to a database, the tab that
// leads, and a writer whose every acknowledged write and watched change
// each tab records.
import type { BrowserContext, Page } from '@playwright/test';
import { openHarness } from './harness.js';

export type Lib = typeof import('../../js/src/index.js');
export type Db = import('../../js/src/index.js').RemoteDatabase;
declare global {
  interface Window {
    lib: Lib;
    db?: Db;
    tab: TabState;
  }
}

/** What a page under test keeps: its connection, its writer's progress, its watch log. */
export interface TabState {
  id: string;
  acked: number[];
  issued: number;
  errors: string[];
  ackTimes: number[];
  events: { seq: number; kind: string; key: string }[];
  gaps: { from: number; to: number }[];
  stop: boolean;
  writing?: Promise<void>;
  watchStart?: number;
}

export async function tab(context: BrowserContext, name: string, id: string, mergeOperator?: 'u64add'): Promise<Page> {
  const page = await context.newPage();
  await openHarness(page);
  await page.evaluate(
    async ([name, id, mergeOperator]) => {
      window.lib = (await import('/siltdb/dist/index.js' as string)) as Lib;
      window.db = await window.lib.connect(name!, mergeOperator ? { mergeOperator: 'u64add' } : {});
      window.tab = { id: id!, acked: [], issued: 0, errors: [], ackTimes: [], events: [], gaps: [], stop: false };
    },
    [name, id, mergeOperator],
  );
  return page;
}

/** The page whose connection leads now (waits for one: a failover may be under way). */
export async function leaderOf(pages: Page[]): Promise<number> {
  for (let tries = 0; tries < 200; tries++) {
    for (let i = 0; i < pages.length; i++) {
      const p = pages[i]!;
      if (!p.isClosed() && (await p.evaluate(() => window.db?.isLeader ?? false).catch(() => false))) return i;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('no tab leads');
}

export const SOAK = process.env.SILT_SOAK === '1';

/**
 * Starts the page's writer: batches of `log/<tab>/<n>` and `last/<tab>`,
 * up to four in flight, until `tab.stop`; and a watch of `log/` from the
 * sequence number it reads first.
 */
export async function startWork(page: Page): Promise<void> {
  await page.evaluate(async () => {
    const { db, tab, lib } = window;
    const enc = new TextEncoder();
    const dec = new TextDecoder();
    const since = await db!.latestSequence();
    tab.watchStart = Date.now();
    void (async () => {
      for await (const e of db!.watch({ since, gte: 'log/', lt: 'log0' })) {
        if (e.kind === 'gap') tab.gaps.push({ from: e.from, to: e.to });
        else tab.events.push({ seq: e.seq, kind: e.kind, key: dec.decode(e.key) });
      }
    })();
    const issuedAt: number[] = [];
    (tab as unknown as { issuedAt: number[] }).issuedAt = issuedAt;
    tab.writing = (async () => {
      const inflight = new Set<Promise<void>>();
      for (let n = 0; !tab.stop; n++) {
        issuedAt[n] = Date.now();
        tab.issued = n + 1;
        const key = `log/${tab.id}/${String(n).padStart(6, '0')}`;
        const p: Promise<void> = db!.write(new lib.WriteBatch().put(key, enc.encode(String(n))).put(`last/${tab.id}`, enc.encode(String(n)))).then(
          () => {
            tab.acked.push(n);
            tab.ackTimes.push(Date.now());
          },
          (e: { code?: string; message?: string }) => {
            tab.errors.push(`${n}: ${e.code}: ${e.message}`);
          },
        );
        inflight.add(p);
        void p.finally(() => inflight.delete(p));
        if (inflight.size >= 4) await Promise.race(inflight);
        await new Promise((r) => setTimeout(r, 1));
      }
      await Promise.all(inflight);
    })();
  });
}

export type Collected = {
  id: string;
  acked: number[];
  issued: number;
  errors: string[];
  events: TabState['events'];
  gaps: TabState['gaps'];
  watchStart: number;
  issuedAt: number[];
};

export async function collect(page: Page): Promise<Collected> {
  return page.evaluate(() => {
    const t = window.tab;
    return {
      id: t.id,
      acked: [...t.acked],
      issued: t.issued,
      errors: [...t.errors],
      events: [...t.events],
      gaps: [...t.gaps],
      watchStart: t.watchStart ?? 0,
      issuedAt: [...(t as unknown as { issuedAt: number[] }).issuedAt],
    };
  });
}
