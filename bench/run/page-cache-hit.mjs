// A page cache hit's cost in Node (js/dist, after `cd js && npm run build`):
// RemoteDatabase.get of 1,000 keys (16-char ASCII strings) kept in the
// connection's page cache, 300,000 gets awaited one at a time, six rounds,
// for 100-byte values as bytes (each hit copies them: the caller owns what
// it gets) and as utf8 (decoded from the kept bytes, no copy). No leader and
// no browser: a stub connection whose every request fails (a miss would
// throw). `npm run bench:page` measures hits from a page in Chromium.
//
//   node bench/run/page-cache-hit.mjs
import { cpus } from 'node:os';
import { Codec } from '../../js/dist/core/encoding.js';
import { binaryKey, PageCache } from '../../js/dist/tabs/page-cache.js';
import { RemoteDatabase } from '../../js/dist/tabs/remote-database.js';

const KEYS = Array.from({ length: 1000 }, (_, i) => String(i).padStart(16, '0'));
const GETS = 300_000;

async function rounds(valueEncoding) {
  const cache = new PageCache(4 << 20);
  cache.link('leader');
  const connection = { cache, writing: 0, epoch: 1, name: 'bench', send: () => Promise.reject(new Error('a miss')) };
  const db = new RemoteDatabase(connection, Codec.root({ valueEncoding }));
  const enc = new TextEncoder();
  for (const k of KEYS) cache.keep(cache.fill(binaryKey(enc.encode(k))), enc.encode('x'.repeat(100)));
  const us = [];
  for (let r = 0; r < 6; r++) {
    const t0 = performance.now();
    for (let i = 0; i < GETS; i++) await db.get(KEYS[i % KEYS.length]);
    us.push(((performance.now() - t0) * 1000) / GETS);
  }
  return us;
}

const machine = { node: process.version, cpu: cpus()[0]?.model, cores: cpus().length };
for (const valueEncoding of ['view', 'utf8']) {
  const us = await rounds(valueEncoding);
  const median = [...us].sort((a, b) => a - b)[us.length >> 1];
  console.log(
    JSON.stringify({
      bench: 'page-cache-hit',
      date: new Date().toISOString(),
      machine,
      valueEncoding,
      gets: GETS,
      usPerHit: us.map((x) => +x.toFixed(3)),
      median: +median.toFixed(3),
    }),
  );
}
