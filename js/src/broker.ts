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

/** How long a follower's request waits for its leader to register. */
const WAIT_MS = 1_000;

interface Leading {
  leader: string;
  port: MessagePort;
}

const leaders = new Map<string, Leading>();
/** Follower ports waiting for leader `leader` of database `name`, by `${name}\n${leader}`. */
const waiting = new Map<string, { client: string; port: MessagePort; timer: ReturnType<typeof setTimeout> }[]>();

function handOver(l: Leading, client: string, port: MessagePort): void {
  l.port.postMessage({ t: 'attach', client, port } satisfies BrokerMessage, [port]);
}

function onMessage(from: MessagePort, m: BrokerMessage): void {
  if (m.t === 'lead') {
    const l: Leading = { leader: m.leader, port: from };
    leaders.set(m.name, l);
    const key = `${m.name}\n${m.leader}`;
    for (const w of waiting.get(key) ?? []) {
      clearTimeout(w.timer);
      handOver(l, w.client, w.port);
    }
    waiting.delete(key);
  } else if (m.t === 'unlead') {
    if (leaders.get(m.name)?.leader === m.leader) leaders.delete(m.name);
  } else if (m.t === 'connect') {
    const l = leaders.get(m.name);
    if (l?.leader === m.leader) {
      handOver(l, m.client, m.port);
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
    list.push({ client: m.client, port, timer });
    waiting.set(key, list);
  }
}

(globalThis as unknown as { addEventListener(type: 'connect', f: (e: MessageEvent) => void): void }).addEventListener('connect', (e) => {
  const port = e.ports[0];
  if (port === undefined) return;
  port.addEventListener('message', (ev: MessageEvent<BrokerMessage>) => onMessage(port, ev.data));
  port.start();
});
