// Tabs of one origin sharing a database through the real src/tabs/
// (Connection, RemoteDatabase, connect()) and leader.ts, in the simulated
// browser of tabs-browser.ts and tabs-world.ts: each tab a realm with its own locks view and
// a dedicated FakeWorker; one in-memory database that passes from worker
// to worker. Tests drive the world's scheduler (world.run, world.until).

import { connect, type ConnectOptions } from '../src/tabs/connect.js';
import { Connection } from '../src/tabs/connection.js';
import { RemoteDatabase } from '../src/tabs/remote-database.js';
import type { Database } from '../src/local/database.js';
import { openMemory, type OpenOptions } from '../src/index.js';
import type { Leader } from '../src/tabs/leader.js';
import { FakeWorker, install, Storage, uninstall } from './tabs-browser.js';
import { type Realm, settle, World } from './tabs-world.js';

let names = 0;

export interface Tab {
  realm: Realm;
  name: string;
  /** The workers this tab gave its connections, newest last. */
  workers: FakeWorker[];
  connection: Connection | undefined;
}

export class Origin {
  readonly tabs: Tab[] = [];
  /** The database's name (new for each origin: the broker is shared by every test of a file). */
  readonly name = `db${++names}`;

  private constructor(
    readonly world: World,
    readonly storage: Storage,
  ) {}

  static async create(seed: number, mode: 'random' | 'fifo' = 'random', options: OpenOptions = {}): Promise<Origin> {
    const db = await openMemory(options);
    const w = new World(seed, mode);
    await install(w);
    return new Origin(w, new Storage(db as Database));
  }

  /**
   * Another database of this origin's simulated browser: a new name and
   * in-memory database on the same world, so that one scenario can connect
   * to several. `dispose()` only the first origin (it puts the globals
   * back); close a sibling's `db` yourself.
   */
  async sibling(options: OpenOptions = {}): Promise<Origin> {
    return new Origin(this.world, new Storage((await openMemory(options)) as Database));
  }

  get db(): Database {
    return this.storage.db;
  }

  /** The leader serving now (whose worker holds the database), if any. */
  get leader(): Leader | undefined {
    const h = this.storage.holder;
    return h !== undefined && !h.inner.dead ? h.leader : undefined;
  }

  /** The tab whose worker holds the database now. */
  get leading(): Tab | undefined {
    const h = this.storage.holder;
    return this.tabs.find((t) => h !== undefined && t.workers.includes(h));
  }

  tab(name = `tab${this.tabs.length}`): Tab {
    const t: Tab = { realm: this.world.page(name), name, workers: [], connection: undefined };
    this.tabs.push(t);
    return t;
  }

  #worker(t: Tab): FakeWorker {
    const w = new FakeWorker(this.world, t.realm, this.storage);
    t.workers.push(w);
    return w;
  }

  /**
   * A connection of tab `t` made as connect() makes one (without its
   * sharing within a realm), and a handle on it. `shared: false`: a realm
   * without SharedWorker (a worker's connect(), Chrome on Android).
   */
  open(t: Tab, options: { shared?: boolean; pageCacheCapacity?: number } & Omit<OpenOptions, 'signal'> = {}): { connection: Connection; db: RemoteDatabase } {
    const { shared = true, pageCacheCapacity, ...rest } = options;
    const g = globalThis as Record<string, unknown>;
    const sw = g.SharedWorker;
    if (!shared) delete g.SharedWorker;
    try {
      const connection = this.world.within(
        t.realm,
        () => new Connection(this.name, rest, this.#worker(t) as unknown as Worker, this.#locksOf(t), pageCacheCapacity),
      );
      t.connection = connection;
      connection.refs++;
      void this.world.within(t.realm, () => connection.start()).catch(() => {});
      return { connection, db: new RemoteDatabase(connection) };
    } finally {
      g.SharedWorker = sw;
    }
  }

  /** connect() in tab `t` (its navigator.locks is the tab's); `shared: false`, in a realm without SharedWorker. */
  connect(t: Tab, options: ConnectOptions = {}, shared = true): Promise<RemoteDatabase> {
    const g = globalThis as Record<string, unknown>;
    const nav = g.navigator;
    const sw = g.SharedWorker;
    g.navigator = { locks: this.#locksOf(t) };
    if (!shared) delete g.SharedWorker;
    try {
      return this.world.within(t.realm, () => connect(this.name, { worker: this.#worker(t) as unknown as Worker, ...options }));
    } finally {
      if (nav === undefined) delete g.navigator;
      else g.navigator = nav;
      g.SharedWorker = sw;
    }
  }

  /** The tab's navigator.locks: one object per realm, as in a browser. */
  #locksOf(t: Tab): ReturnType<World['locks']['view']> {
    let l = this.#views.get(t);
    if (l === undefined) {
      l = this.world.locks.view(t.realm);
      this.#views.set(t, l);
    }
    return l;
  }

  #views = new Map<Tab, ReturnType<World['locks']['view']>>();

  /** Closes the tab at once (a crash, or the page closed). */
  kill(t: Tab): void {
    this.world.kill(t.realm);
  }

  /** Closes the database and puts the globals back, once what is left of this origin's work has run. */
  async dispose(): Promise<void> {
    this.world.holds.length = 0;
    for (let i = 0; i < 3; i++) await settle();
    if (!this.db.closed) this.db.close();
    for (let i = 0; i < 3; i++) await settle();
    uninstall();
  }
}

/** How a promise settled, for assertions: its value, or its error's code. */
export async function outcome(o: Origin, p: Promise<unknown>, ms = 60_000): Promise<string> {
  const r = await o.world.until(p, ms);
  if (r === undefined) return 'pending';
  if (r.ok) return 'ok';
  const e = r.error as { code?: string; message?: string };
  return e.code ?? String(e.message ?? e);
}

/** Tabs `names` of `o`, each connected (in order) once the one before is ready; throws if one is not. */
export async function readyTabs(o: Origin, ...names: string[]): Promise<{ tab: Tab; connection: Connection; db: RemoteDatabase }[]> {
  const out: { tab: Tab; connection: Connection; db: RemoteDatabase }[] = [];
  for (const name of names) {
    const tab = o.tab(name);
    const opened = o.open(tab);
    const r = await outcome(o, opened.connection.ready);
    if (r !== 'ok') throw new Error(`tab ${name} did not connect: ${r}`);
    out.push({ tab, ...opened });
  }
  return out;
}
