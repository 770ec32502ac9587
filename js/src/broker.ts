/**
 * The SharedWorker that introduces followers to leaders (tabs/connection.ts). A
 * follower sends it one end of a new MessageChannel, named for the leader
 * it wants; the broker hands that port to the leader's page, which passes
 * it on to its worker. From then on the two talk over the port alone, a
 * direct line between the follower's realm and the leader's worker: about
 * three times faster than a BroadcastChannel in Chromium
 * (docs/bench/tabs.md), and buffers can be transferred.
 *
 * One broker serves every database of the origin. It keeps nothing but
 * which page port leads which database; a follower whose leader it does not
 * know within `WAIT_MS` is told so, and falls back to the BroadcastChannel.
 */

import type { BrokerMessage } from './tabs/protocol.js';

/**
 * The protocol version a message states (absent: 0), as protocol.ts's
 * `versionOf` reads it: written here again so that broker.js imports
 * nothing of the package's (a value import would put protocol.ts, and what
 * it imports, in a chunk it shares with the page's bundle).
 */
const versionOf = (m: { v?: unknown }): number => (typeof m.v === 'number' ? m.v : 0);

/** How long a follower's request waits for its leader to register. */
const WAIT_MS = 1_000;

interface Leading {
  leader: string;
  port: MessagePort;
}

function handOver(l: Leading, client: string, port: MessagePort, v: number): void {
  l.port.postMessage({ t: 'attach', client, port, v } satisfies BrokerMessage, [port]);
}

/** Whether `m` is a message this broker reads: any realm of the origin may post anything here. */
function wellFormed(m: unknown): m is BrokerMessage {
  if (typeof m !== 'object' || m === null) return false;
  const x = m as Record<string, unknown>;
  if (typeof x.name !== 'string' || typeof x.leader !== 'string') return false;
  if (x.t === 'lead' || x.t === 'unlead') return true;
  const port = x.port as { postMessage?: unknown } | undefined;
  return x.t === 'connect' && typeof x.client === 'string' && typeof port?.postMessage === 'function';
}

/**
 * A broker's state and the handler of its `connect` events: one per
 * SharedWorker instance. (An instance can die under its pages, with the
 * renderer process it ran in: a page then makes a new SharedWorker, which
 * starts a new instance knowing no leader; connection.ts.)
 */
export function startBroker(): (e: { ports: readonly MessagePort[] }) => void {
  const leaders = new Map<string, Leading>();
  /** Follower ports waiting for leader `leader` of database `name`, by `${name}\n${leader}`. */
  const waiting = new Map<string, { client: string; port: MessagePort; timer: ReturnType<typeof setTimeout>; v: number }[]>();

  const onMessage = (from: MessagePort, m: BrokerMessage): void => {
    if (m.t === 'lead') {
      const l: Leading = { leader: m.leader, port: from };
      leaders.set(m.name, l);
      const key = `${m.name}\n${m.leader}`;
      for (const w of waiting.get(key) ?? []) {
        clearTimeout(w.timer);
        handOver(l, w.client, w.port, w.v);
      }
      waiting.delete(key);
    } else if (m.t === 'unlead') {
      if (leaders.get(m.name)?.leader === m.leader) leaders.delete(m.name);
    } else if (m.t === 'connect') {
      const l = leaders.get(m.name);
      if (l?.leader === m.leader) {
        handOver(l, m.client, m.port, versionOf(m));
        return;
      }
      const key = `${m.name}\n${m.leader}`;
      const list = waiting.get(key) ?? [];
      const port = m.port;
      const timer = setTimeout(() => {
        const left = (waiting.get(key) ?? []).filter((w) => w.port !== port);
        if (left.length > 0) waiting.set(key, left);
        else waiting.delete(key);
        port.postMessage({ t: 'unknown' });
        port.close();
      }, WAIT_MS);
      list.push({ client: m.client, port, timer, v: versionOf(m) });
      waiting.set(key, list);
    }
  };

  return (e) => {
    const port = e.ports[0];
    if (port === undefined) return;
    port.addEventListener('message', (ev: MessageEvent<unknown>) => {
      if (wellFormed(ev.data)) onMessage(port, ev.data);
    });
    port.start();
  };
}

(globalThis as unknown as { addEventListener(type: 'connect', f: (e: MessageEvent) => void): void }).addEventListener('connect', startBroker());
