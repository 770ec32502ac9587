#!/usr/bin/env node
// `npm run bench:tabs` (and the end of `npm run bench`): one database shared
// by 1, 2 and 4 tabs through connect(), in Debian's Chromium with a kept
// profile, on real OPFS. For each tab count, from the leading tab and from a
// follower, with the other tabs attached and idle:
//   - a get's round trip (`await db.get(key)`, keys at random among those written),
//   - a batch of 1,000 puts (`await db.write(batch)`),
//   - how long after a write's acknowledgement every other tab's watch sees it
//     (and after its issue, an upper bound on commit-to-seen);
// and, for the choice of transport, the bare round trip of a message from one
// tab to a worker of another over a BroadcastChannel and over a MessagePort a
// SharedWorker brokered (bench/browser/transport/), beside a page's own worker.
// Writes docs/bench/tabs.md and docs/bench/tabs.json.
//
// REQUIRES: bash scripts/build.sh. Never downloads a browser.
//
//   node bench/run/tabs.mjs [--gets 3000] [--batches 20] [--watched 300] [--keys 10000] [--reps 3]
import { mkdirSync, writeFileSync } from 'node:fs';
import { parseArgs, runMain } from './args.mjs';
import { withBenchPage } from './browser-session.mjs';
import { metaMarkdown, startRun } from './machine.mjs';

const USAGE = 'usage: node bench/run/tabs.mjs [--gets N] [--batches N] [--watched N] [--keys N] [--reps N] [--timeout-min N]';
const FLAGS = { gets: 3000, batches: 20, watched: 300, keys: 10_000, reps: 3, 'timeout-min': 20 };
const log = (m) => process.stderr.write(`[bench:tabs] ${m}\n`);

/** Loads siltdb into `page` and connects to `name`. */
async function connectTab(page, name) {
  await page.evaluate(async (name) => {
    window.silt = await import('/siltdb/dist/index.js');
    window.db = await window.silt.connect(name);
  }, name);
}

/** Round trips and batch writes from `page`: means in µs and ms. */
function measure(page, o) {
  return page.evaluate(async ({ gets, batches, keys }) => {
    const { db, silt } = window;
    const enc = new TextEncoder();
    const key = (i) => `key${String(i).padStart(13, '0')}`;
    let x = 12345;
    const rnd = () => {
      x = (x * 1103515245 + 12345) >>> 0;
      return x;
    };
    for (let i = 0; i < 200; i++) await db.get(key(rnd() % keys)); // warm up
    let t0 = performance.now();
    for (let i = 0; i < gets; i++) {
      const v = await db.get(key(rnd() % keys));
      if (v === undefined) throw new Error('a key written is missing');
    }
    const getUs = ((performance.now() - t0) * 1000) / gets;
    const value = new Uint8Array(100).fill(7);
    t0 = performance.now();
    for (let b = 0; b < batches; b++) {
      const batch = new silt.WriteBatch();
      for (let i = 0; i < 1000; i++) batch.put(`batch/${String(b * 1000 + i).padStart(10, '0')}`, value);
      await db.write(batch);
    }
    const batchMs = (performance.now() - t0) / batches;
    void enc;
    return { getUs, batchMs };
  }, o);
}

/** Watch delays: `writer` puts `n` keys one by one; every page of `watchers` records when each arrives. */
async function watchDelays(writer, watchers, n, tag) {
  for (const w of watchers) {
    await w.evaluate((tag) => {
      window.seen = new Map();
      window.watching = window.db.watch({ gte: `${tag}/`, lt: `${tag}0` }, (e) => {
        if (e.kind === 'put') window.seen.set(new TextDecoder().decode(e.key), performance.timeOrigin + performance.now());
      });
    }, tag);
  }
  const sent = await writer.evaluate(
    async ({ n, tag }) => {
      const out = [];
      for (let i = 0; i < n; i++) {
        const k = `${tag}/${String(i).padStart(6, '0')}`;
        const issued = performance.timeOrigin + performance.now();
        await window.db.put(k, new Uint8Array([1]));
        out.push({ k, issued, acked: performance.timeOrigin + performance.now() });
        await new Promise((r) => setTimeout(r, 2));
      }
      return out;
    },
    { n, tag },
  );
  await new Promise((r) => setTimeout(r, 300));
  const afterAck = [];
  const afterIssue = [];
  let missing = 0;
  for (const w of watchers) {
    const seen = await w.evaluate(() => {
      window.watching.close();
      return Object.fromEntries(window.seen);
    });
    for (const s of sent) {
      const at = seen[s.k];
      if (at === undefined) missing++;
      else {
        afterAck.push(at - s.acked);
        afterIssue.push(at - s.issued);
      }
    }
  }
  const med = (a) => a.sort((p, q) => p - q)[a.length >> 1];
  const p99 = (a) => a.sort((p, q) => p - q)[Math.floor(a.length * 0.99)];
  return { afterAckMs: { median: med(afterAck), p99: p99(afterAck) }, afterIssueMs: { median: med(afterIssue), p99: p99(afterIssue) }, missing };
}

/** The bare transports: a page's own worker, and another tab's worker over BroadcastChannel and over a brokered MessagePort. */
async function transports(leader, follower, n) {
  const rtFront = async (page, kind, size) => {
    await page.bringToFront();
    return rt(page, kind, size);
  };
  await leader.evaluate(async () => {
    const w = new Worker('/bench/transport/echo-worker.js');
    window.echo = w;
    const sw = new SharedWorker('/bench/transport/broker.js');
    sw.port.start();
    sw.port.postMessage('lead');
    sw.port.onmessage = (m) => w.postMessage({ port: m.data.client }, [m.data.client]);
    window.broker = sw;
    await new Promise((r) => setTimeout(r, 200));
  });
  const rt = (page, kind, size) =>
    page.evaluate(
      async ({ kind, n, size }) => {
        let send;
        let recv;
        if (kind === 'own worker') {
          const w = window.echo;
          send = (m) => w.postMessage(m);
          recv = (f) => (w.onmessage = f);
        } else if (kind === 'BroadcastChannel') {
          window.bc ??= new BroadcastChannel('siltdb-bench-echo');
          const bc = window.bc;
          send = (m) => bc.postMessage(m);
          recv = (f) => (bc.onmessage = f);
        } else {
          if (!window.port) {
            const sw = new SharedWorker('/bench/transport/broker.js');
            sw.port.start();
            const ch = new MessageChannel();
            sw.port.postMessage({ client: ch.port2 }, [ch.port2]);
            window.port = ch.port1;
            window.broker = sw;
            await new Promise((r) => setTimeout(r, 200));
          }
          const p = window.port;
          send = (m) => p.postMessage(m);
          recv = (f) => (p.onmessage = f);
        }
        const msg = { id: 0, key: new Uint8Array(16), value: new Uint8Array(size) };
        const once = () =>
          new Promise((r) => {
            recv(() => r());
            send(msg);
          });
        for (let i = 0; i < 100; i++) await once();
        const t0 = performance.now();
        for (let i = 0; i < n; i++) {
          msg.id = i;
          await once();
        }
        return ((performance.now() - t0) * 1000) / n;
      },
      { kind, n, size },
    );
  const out = [];
  for (const size of [100, 100_000]) {
    out.push({ size, kind: 'own worker (same tab)', us: await rtFront(leader, 'own worker', size) });
    out.push({ size, kind: 'BroadcastChannel (other tab)', us: await rtFront(follower, 'BroadcastChannel', size) });
    out.push({ size, kind: 'MessagePort via SharedWorker (other tab)', us: await rtFront(follower, 'port', size) });
  }
  return out;
}

async function main() {
  const o = parseArgs(process.argv.slice(2), FLAGS, USAGE);
  const info = startRun(
    `bash scripts/build.sh && node bench/run/tabs.mjs --gets ${o.gets} --batches ${o.batches} --watched ${o.watched} --keys ${o.keys} --reps ${o.reps}`,
  );
  const results = { options: { gets: o.gets, batches: o.batches, watched: o.watched, keys: o.keys, reps: o.reps }, tabs: [], transport: [] };
  await withBenchPage(
    async ({ page, url, browser }) => {
      const context = page.context();
      for (const tabs of [1, 2, 4]) {
        const name = `bench-tabs-${tabs}`;
        const pages = [page];
        for (let i = 1; i < tabs; i++) {
          const p = await context.newPage();
          await p.goto(`${url}benchmarks/`);
          pages.push(p);
        }
        // The first tab connects first, so it leads.
        for (const p of pages) await connectTab(p, name);
        const leads = await Promise.all(pages.map((p) => p.evaluate(() => window.db.isLeader)));
        if (!leads[0] || leads.slice(1).some(Boolean)) throw new Error(`expected the first tab to lead: ${leads}`);
        await page.evaluate(async (keys) => {
          const value = new Uint8Array(100).fill(1);
          for (let b = 0; b < keys; b += 1000) {
            const batch = new window.silt.WriteBatch();
            for (let i = b; i < Math.min(keys, b + 1000); i++) batch.put(`key${String(i).padStart(13, '0')}`, value);
            await window.db.write(batch);
          }
          await window.db.flush();
          await window.db.idle();
        }, o.keys);
        const row = { tabs };
        // The measured tab in front (Chromium lowers the priority of a
        // background tab's renderer); leader and follower in turn, `reps`
        // times, medians kept: these machines are noisy.
        const runs = { leader: [], follower: [] };
        for (let rep = 0; rep < o.reps; rep++) {
          log(`${tabs} tab(s), rep ${rep + 1}: leader`);
          await page.bringToFront();
          runs.leader.push(await measure(page, o));
          if (tabs > 1) {
            log(`${tabs} tabs, rep ${rep + 1}: follower`);
            await pages[1].bringToFront();
            runs.follower.push(await measure(pages[1], o));
          }
        }
        const median = (list, k) => list.map((x) => x[k]).sort((a, b) => a - b)[list.length >> 1];
        const summary = (list) => ({ getUs: median(list, 'getUs'), batchMs: median(list, 'batchMs'), runs: list });
        row.leader = summary(runs.leader);
        if (tabs > 1) {
          row.follower = summary(runs.follower);
          await page.bringToFront();
          log(`${tabs} tabs: watch`);
          row.watchLeaderWrites = await watchDelays(page, pages.slice(1), o.watched, 'wl');
          row.watchFollowerWrites = await watchDelays(
            pages[1],
            pages.filter((_, i) => i !== 1),
            o.watched,
            'wf',
          );
        }
        log(JSON.stringify(row));
        results.tabs.push(row);
        for (const p of pages.slice(1).reverse()) {
          await p.evaluate(() => window.db.close());
          await p.close();
        }
        await page.evaluate(() => window.db.close());
        if (tabs === 2) {
          // The transports, between this tab and a second one.
          const other = await context.newPage();
          await other.goto(`${url}benchmarks/`);
          log('transports');
          await other.bringToFront();
          results.transport = await transports(page, other, o.gets);
          await other.close();
        }
      }
      const meta = info.finish({ browser });
      mkdirSync('docs/bench', { recursive: true });
      writeFileSync('docs/bench/tabs.json', `${JSON.stringify({ ...meta, ...results }, null, 1)}\n`);
      writeFileSync('docs/bench/tabs.md', markdown(meta, results));
      log('wrote docs/bench/tabs.md and docs/bench/tabs.json');
    },
    { timeoutMin: o['timeout-min'], log },
  );
}

function markdown(meta, r) {
  const f = (x, d = 0) => (x === undefined ? '–' : x.toFixed(d));
  let md =
    `# Many tabs, one database: connect() from the leading tab and from followers (Chromium, OPFS)\n\n` +
    `One database shared through \`connect()\` by 1, 2 and 4 tabs; the first tab leads (its worker has the database open), the others ` +
    `send their requests to it over a BroadcastChannel of their own (docs/tabs.md). ${r.options.keys.toLocaleString('en')} keys of 16 bytes with 100-byte values, ` +
    `flushed. A get is \`await db.get(key)\` at random among them (mean of ${r.options.gets.toLocaleString('en')}, after 200 to warm up); a batch is \`await db.write(batch)\` ` +
    `of 1,000 puts (mean of ${r.options.batches}). Each figure is measured in one tab, brought to the front, while the others are attached and idle; leader and follower take turns, ${r.options.reps} times, and the median is shown. ` +
    `Watch: one tab puts ${r.options.watched} keys one at a time (2 ms apart); every other tab's \`watch\` callback records when each arrives; ` +
    `"after the ack" is that less the moment the writer's \`put\` resolved (the leader publishes a change just before it answers), "after the issue" less the moment the writer called \`put\` ` +
    `(an upper bound on commit to seen). Times from \`performance.timeOrigin + performance.now()\`, one clock for every tab.\n\n` +
    metaMarkdown(meta) +
    `\n| tabs | get, leader | get, follower | follower / leader | 1,000 puts, leader | 1,000 puts, follower | follower / leader |\n|---:|---:|---:|---:|---:|---:|---:|\n`;
  for (const row of r.tabs) {
    const g = row.follower ? row.follower.getUs / row.leader.getUs : undefined;
    const b = row.follower ? row.follower.batchMs / row.leader.batchMs : undefined;
    md += `| ${row.tabs} | ${f(row.leader.getUs)} µs | ${row.follower ? `${f(row.follower.getUs)} µs` : '–'} | ${g ? `${f(g, 2)}×` : '–'} | ${f(row.leader.batchMs, 2)} ms | ${row.follower ? `${f(row.follower.batchMs, 2)} ms` : '–'} | ${b ? `${f(b, 2)}×` : '–'} |\n`;
  }
  md += `\n| tabs | writer | seen by the others, after the ack (median / p99) | after the issue (median / p99) | changes not seen |\n|---:|---|---:|---:|---:|\n`;
  for (const row of r.tabs.filter((x) => x.watchLeaderWrites)) {
    for (const [who, w] of [
      ['leader', row.watchLeaderWrites],
      ['follower', row.watchFollowerWrites],
    ]) {
      md += `| ${row.tabs} | ${who} | ${f(w.afterAckMs.median, 2)} / ${f(w.afterAckMs.p99, 2)} ms | ${f(w.afterIssueMs.median, 2)} / ${f(w.afterIssueMs.p99, 2)} ms | ${w.missing} |\n`;
    }
  }
  if (r.transport.length > 0) {
    md +=
      `\n## The transport between tabs\n\nThe bare round trip of a message (a 16-byte key and a value of the size shown) from a tab to a dedicated worker, ` +
      `mean of ${r.options.gets.toLocaleString('en')}: to the tab's own worker, and from another tab over a BroadcastChannel or over a MessagePort that a SharedWorker ` +
      `handed over (bench/browser/transport/). This is the floor under a follower's request, whatever the database does.\n\n| value | transport | round trip |\n|---:|---|---:|\n`;
    for (const t of r.transport) md += `| ${t.size.toLocaleString('en')} B | ${t.kind} | ${f(t.us)} µs |\n`;
  }
  return md;
}

runMain(main, log);
