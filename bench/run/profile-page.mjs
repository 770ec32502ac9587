#!/usr/bin/env node
// Where a connect() get from a page's main thread goes (issue 34, item 1),
// in Debian's Chromium with a kept profile: each get timed on the page
// from the call to the worker's postMessage (the page's part before the
// message), from the answer's message event to the awaited value (the
// page's part after), and in the leader's worker from the message event to
// the answer posted (bench/browser/page/timed-worker.js); what is left is
// the platform's (two messages). Beside it, the floor: a worker answering
// from a Map (map-worker.js) over the same kind of clocks. Then, unless
// --time-only, the page's main thread profiled with V8's sampling profiler.
// Run it with SILT_HTTP_ISOLATE=1 (a cross-origin-isolated page): elsewhere
// Chromium's clock has 100 µs steps, and the parts are only averages of
// jittered steps.
//
// REQUIRES: bash scripts/build.sh (js/dist, js/pkg).
//
// --op put times awaited puts instead (each writing a key's own value again),
// and the floor's puts appended to an OPFS file first (a durable put's floor);
// --op get32 groups of 32 gets issued in one Promise.all, and the same groups
// asked with one multiGet (per group: the
// total, the worker's time serving and posting, the engine's MultiGet in it,
// and the page's part before the post and after the answer). The profiles
// list self time as shares, then total time (callees included) in µs per
// call or group. --trace FILE also writes a Chrome trace (Tracing over CDP)
// of a short run of silt's calls, for chrome://tracing or Perfetto: the
// page's and the worker's tasks, message (de)serialization, GC.
//
//   node bench/run/profile-page.mjs [--keys 10000] [--gets 20000] [--reps 3] [--top 25] [--time-only] [--op get|put|get32] [--trace FILE]
import { resolve } from 'node:path';
import { parseArgs, runMain } from './args.mjs';
import { withBenchPage } from './browser-session.mjs';
import { machineText } from './machine.mjs';
import { printTop, topSelf, topTotal } from './v8-profile.mjs';

const args = parseArgs(
  process.argv.slice(2),
  { keys: 10_000, gets: 20_000, reps: 3, top: 25, 'time-only': false, op: 'get', 'timeout-min': 15, trace: '', ab: '' },
  'usage: node bench/run/profile-page.mjs [--keys N] [--gets N] [--reps N] [--top N] [--time-only] [--op get|put|get32] [--trace FILE] [--ab DIR]',
);
// --ab DIR: a second leader from another build of js/dist (DIR, served as
// /siltdb/dist-b/: its worker's modules, the same wasm and page code), its
// own database filled alike, timed in the same repetitions as the first,
// which goes first alternating: B's time over A's per repetition, the
// total and the worker's part without its OPFS writes (the platform's).
if (args.ab !== '') process.env.SILT_AB_DIST_DIR = resolve(args.ab);
const log = (m) => process.stderr.write(`[profile-page] ${m}\n`);

async function main() {
  await withBenchPage(
    async ({ page, browser }) => {
      const isolated = await page.evaluate(() => globalThis.crossOriginIsolated === true);
      console.log(
        `${browser}; ${machineText()}; ${new Date().toISOString()}; ${args.keys} keys, ${args.gets} gets per rep; ${isolated ? 'cross-origin isolated (5 µs clock)' : 'not cross-origin isolated: a 100 µs clock with jitter (SILT_HTTP_ISOLATE=1 for 5 µs)'}`,
      );
      await page.evaluate(
        async ({ keys, ab }) => {
          const { connect } = await import('/siltdb/dist/index.js');
          const { keyTextOf, valueFor } = await import('/bench/common.js');
          // Clocks on the page side of a worker: the last post, the last answer's event.
          const clocked = (w) => {
            const c = { posted: 0, answered: 0 };
            const post = w.postMessage.bind(w);
            w.postMessage = (m, t) => {
              c.posted = performance.now();
              post(m, t);
            };
            w.addEventListener('message', () => {
              c.answered = performance.now();
            });
            return c;
          };
          console.log('[bench] starting the leader worker');
          const worker = new Worker('/bench/page/timed-worker.js', { type: 'module', name: 'siltdb-timed' });
          worker.addEventListener('error', (e) => console.log(`[bench] worker error ${e.message}`));
          const siltClock = clocked(worker);
          const db = await connect(`profile-page-${Date.now()}`, { worker });
          console.log('[bench] connected');
          const fill = async (d) => {
            for (let b = 0; b < keys; b += 1000) {
              const batch = d.batch();
              for (let i = b; i < Math.min(keys, b + 1000); i++) batch.put(keyTextOf(i), valueFor(i));
              await d.write(batch);
            }
            await d.flush();
          };
          await fill(db);
          // The --ab build's leader, its database filled alike.
          let dbB;
          let siltClockB;
          let workerB;
          if (ab) {
            workerB = new Worker('/bench/page/timed-worker.js?dist=/siltdb/dist-b/', { type: 'module', name: 'siltdb-timed-b' });
            workerB.addEventListener('error', (e) => console.log(`[bench] worker B error ${e.message}`));
            siltClockB = clocked(workerB);
            dbB = await connect(`profile-page-b-${Date.now()}`, { worker: workerB });
            await fill(dbB);
            console.log('[bench] B connected and filled');
          }
          console.log('[bench] filled');
          const map = new Worker('/bench/page/timed-worker.js?module=/bench/page/map-worker.js', { type: 'module' });
          const mapClock = clocked(map);
          const waiting = [];
          map.onmessage = ({ data }) => {
            if (data?.t !== 'bench-timing') waiting.shift()(data);
          };
          const mapCall = (message) =>
            new Promise((resolve) => {
              waiting.push(resolve);
              map.postMessage(message);
            });
          const mapGet = (key) => mapCall(['get', key]);
          const mapPut = (key) => mapCall(['put', key, valueFor(Number(key))]);
          // The floor of a durable put: each appended to an OPFS file first (map-worker.js).
          const mapPutLogged = (key) => mapCall(['putLogged', key, valueFor(Number(key))]);
          await mapCall(['openLog', 'profile-page']);
          const siltPut = (key) => db.put(key, valueFor(Number(key)));
          await new Promise((resolve) => {
            waiting.push(resolve);
            map.postMessage(['fill', keys]);
          });
          const sumsOf = (w) => () =>
            new Promise((resolve) => {
              const on = ({ data }) => {
                if (data?.t !== 'bench-timing') return;
                w.removeEventListener('message', on);
                resolve(data);
              };
              w.addEventListener('message', on);
              w.postMessage({ t: 'bench-timing' });
            });
          const leaderSums = sumsOf(worker);
          const mapSums = sumsOf(map);
          /** `n` gets of `get`, each awaited: µs per get in total, before the post, after the answer's event. */
          const timeGets = async (get, clock, n) => {
            let before = 0;
            let after = 0;
            const t0 = performance.now();
            for (let i = 0; i < n; i++) {
              const key = keyTextOf((i * 7919) % keys);
              const c0 = performance.now();
              const v = await get(key);
              const c1 = performance.now();
              if (v === undefined && get !== siltPut && get !== siltPutB && get !== mapPut && get !== mapPutLogged) throw new Error(`no value for ${key}`);
              before += clock.posted - c0;
              after += c1 - clock.answered;
            }
            const us = (ms) => (1000 * ms) / n;
            return { total: us(performance.now() - t0), before: us(before), after: us(after) };
          };
          /** `n` groups of 32 gets issued in one Promise.all (or asked of `together`, a multiGet), each group awaited: µs per group. */
          const timeGroups = async (get, n, clock, together) => {
            let before = 0;
            let after = 0;
            const t0 = performance.now();
            for (let g = 0; g < n; g++) {
              const group = Array.from({ length: 32 }, (_, j) => keyTextOf(((g * 32 + j) * 7919) % keys));
              const c0 = performance.now();
              let values;
              if (together === undefined) values = await Promise.all(group.map(get));
              else {
                const result = await together(group);
                values = Array.from({ length: result.length }, (_, i) => result.get(i));
              }
              const c1 = performance.now();
              if (values.some((v) => v === undefined)) throw new Error('a get of the group found nothing');
              if (clock !== undefined) {
                before += clock.posted - c0;
                after += c1 - clock.answered;
              }
            }
            return { total: (1000 * (performance.now() - t0)) / n, before: (1000 * before) / n, after: (1000 * after) / n };
          };
          const leaderSumsB = workerB === undefined ? undefined : sumsOf(workerB);
          const siltPutB = (key) => dbB.put(key, valueFor(Number(key)));
          window.__profilePage = {
            db,
            dbB,
            timeGets,
            timeGroups,
            leaderSums,
            leaderSumsB,
            mapSums,
            mapGet,
            mapPut,
            mapPutLogged,
            siltPut,
            siltPutB,
            mapClock,
            siltClock,
            siltClockB,
          };
        },
        { keys: args.keys, ab: args.ab !== '' },
      );
      for (let rep = 0; rep < args.reps; rep++) {
        const r = await page.evaluate(
          async ([n, op, rep]) => {
            const p = window.__profilePage;
            const mapOp = op === 'put' ? p.mapPut : p.mapGet;
            const siltOp = op === 'put' ? p.siltPut : (k) => p.db.get(k);
            const per = (s) => ({
              served: (1000 * s.servedMs) / s.messages,
              post: (1000 * s.postMs) / s.messages,
              toReceive: (1000 * s.toReceiveMs) / s.messages,
              get: (1000 * s.getMs) / s.messages,
              write: (1000 * s.writeMs) / s.messages,
              file: (1000 * s.fileMs) / s.messages,
              fileWrites: s.fileWrites / s.messages,
              fileBytes: s.fileBytes / s.messages,
              messages: s.messages,
            });
            if (op === 'get32') {
              const groups = Math.max(1, Math.round(n / 32));
              const perGroup = (s) => ({
                served: (1000 * s.servedMs) / groups,
                post: (1000 * s.postMs) / groups,
                toReceive: (1000 * s.toReceiveMs) / groups,
                get: (1000 * s.getMs) / groups,
                messages: s.messages,
              });
              await p.mapSums();
              const floor = await p.timeGroups(p.mapGet, groups);
              const mapWorker = perGroup(await p.mapSums());
              await p.leaderSums();
              const silt = await p.timeGroups((k) => p.db.get(k), groups, p.siltClock);
              const leader = perGroup(await p.leaderSums());
              const multi = await p.timeGroups(undefined, groups, p.siltClock, (keys) => p.db.multiGet(keys));
              const multiLeader = perGroup(await p.leaderSums());
              return { groups, floor, mapWorker, silt, leader, multi, multiLeader };
            }
            await p.mapSums();
            const floor = await p.timeGets(mapOp, p.mapClock, n);
            const mapWorker = per(await p.mapSums());
            let silt;
            let leader;
            let b;
            const timeA = async () => {
              await p.leaderSums();
              silt = await p.timeGets(siltOp, p.siltClock, n);
              leader = per(await p.leaderSums());
            };
            const timeB = async () => {
              if (p.dbB === undefined) return;
              await p.leaderSumsB();
              const total = await p.timeGets(op === 'put' ? p.siltPutB : (k) => p.dbB.get(k), p.siltClockB, n);
              b = { silt: total, leader: per(await p.leaderSumsB()) };
            };
            // Which build goes first alternates from one repetition to the next.
            for (const f of rep % 2 ? [timeB, timeA] : [timeA, timeB]) await f();
            if (op !== 'put') return { floor, mapWorker, silt, leader, b };
            const logged = await p.timeGets(p.mapPutLogged, p.mapClock, n);
            const loggedWorker = per(await p.mapSums());
            return { floor, mapWorker, silt, leader, logged, loggedWorker, b };
          },
          [args.gets, args.op, rep],
        );
        if (args.op === 'get32') {
          const g = (name, t, w) =>
            `${name} ${t.total.toFixed(1)} µs a group of 32; its worker ${w.served.toFixed(1)} µs serving and ${w.post.toFixed(1)} µs posting, in ${w.messages / r.groups} answer messages a group${w.get > 0 ? ` (to Leader.receive ${w.toReceive.toFixed(1)} µs, the engine's gets ${w.get.toFixed(1)} µs)` : ''}`;
          console.log(`rep ${rep + 1}: ${g('floor', r.floor, r.mapWorker)}`);
          console.log(
            `rep ${rep + 1}: ${g('silt', r.silt, r.leader)}; on the page ${r.silt.before.toFixed(1)} µs before the post, ${r.silt.after.toFixed(1)} µs after the answer's event`,
          );
          console.log(
            `rep ${rep + 1}: ${g('silt, one multiGet', r.multi, r.multiLeader)}; on the page ${r.multi.before.toFixed(1)} µs before the post, ${r.multi.after.toFixed(1)} µs after the answer's event`,
          );
          continue;
        }
        const line = (name, t, w) => {
          const messages = t.total - t.before - t.after - w.served - w.post;
          return `${name} ${t.total.toFixed(1)} µs = page before post ${t.before.toFixed(1)} + worker ${w.served.toFixed(1)} + its post ${w.post.toFixed(1)} + page after answer ${t.after.toFixed(1)} + messages ${messages.toFixed(1)} (${w.messages} answers)`;
        };
        console.log(`rep ${rep + 1}: ${line('floor', r.floor, r.mapWorker)}`);
        console.log(
          `rep ${rep + 1}: ${line('silt', r.silt, r.leader)}; in the worker: to Leader.receive ${r.leader.toReceive.toFixed(1)}, the engine's ${args.op === 'put' ? `write ${r.leader.write.toFixed(1)}, its OPFS writes ${r.leader.file.toFixed(1)} (${r.leader.fileWrites.toFixed(2)} per call, ${r.leader.fileBytes.toFixed(0)} bytes)` : `get ${r.leader.get.toFixed(1)}`}`,
        );
        if (r.b !== undefined) {
          const own = (w) => w.served - w.file;
          console.log(
            `rep ${rep + 1}: ${line('silt B (--ab)', r.b.silt, r.b.leader)}; in the worker: the engine's ${args.op === 'put' ? `write ${r.b.leader.write.toFixed(1)}, its OPFS writes ${r.b.leader.file.toFixed(1)}` : `get ${r.b.leader.get.toFixed(1)}`}`,
          );
          console.log(
            `rep ${rep + 1}: B over A: total ${(r.b.silt.total / r.silt.total).toFixed(3)}, the worker's part without its OPFS writes ${(own(r.b.leader) / own(r.leader)).toFixed(3)} (${own(r.b.leader).toFixed(1)} against ${own(r.leader).toFixed(1)} µs)`,
          );
        }
        if (r.logged !== undefined) {
          console.log(
            `rep ${rep + 1}: ${line('floor with an OPFS append', r.logged, r.loggedWorker)}; its OPFS writes ${r.loggedWorker.file.toFixed(1)} (${r.loggedWorker.fileWrites.toFixed(2)} per call, ${r.loggedWorker.fileBytes.toFixed(0)} bytes)`,
          );
        }
      }
      if (args.trace !== '') {
        // A Chrome trace of a short run of silt's calls (Tracing over CDP), written to --trace.
        const cdp = await page.context().newCDPSession(page);
        const chunks = [];
        cdp.on('Tracing.dataCollected', (e) => chunks.push(...e.value));
        const done = new Promise((resolve) => cdp.once('Tracing.tracingComplete', resolve));
        await cdp.send('Tracing.start', {
          traceConfig: {
            includedCategories: [
              'devtools.timeline',
              'v8',
              'v8.execute',
              'blink',
              'toplevel',
              'disabled-by-default-devtools.timeline',
              'ipc',
              'mojom',
              'scheduler',
            ],
          },
          transferMode: 'ReportEvents',
        });
        await page.evaluate(
          async ([n, op]) => {
            const p = window.__profilePage;
            if (op === 'get32') await p.timeGroups((k) => p.db.get(k), Math.max(1, Math.round(n / 32)));
            else await p.timeGets(op === 'put' ? p.siltPut : (k) => p.db.get(k), p.siltClock, n);
          },
          [Math.min(args.gets, 3200), args.op],
        );
        await cdp.send('Tracing.end');
        await done;
        const { writeFileSync } = await import('node:fs');
        writeFileSync(args.trace, JSON.stringify({ traceEvents: chunks }));
        log(`trace: ${chunks.length} events in ${args.trace}`);
      }
      if (!args['time-only']) {
        const cdp = await page.context().newCDPSession(page);
        const leader = await workerSession(cdp, 'timed-worker.js', (u) => !u.includes('module='));
        for (const s of [cdp, leader]) {
          await s.send('Profiler.enable');
          await s.send('Profiler.setSamplingInterval', { interval: 50 });
          await s.send('Profiler.start');
        }
        await page.evaluate(
          async ([n, op]) => {
            const p = window.__profilePage;
            if (op === 'get32') await p.timeGroups((k) => p.db.get(k), Math.max(1, Math.round(n / 32)));
            else await p.timeGets(op === 'put' ? p.siltPut : (k) => p.db.get(k), p.siltClock, n);
          },
          [args.gets, args.op],
        );
        for (const [name, s] of [
          ['the page main thread', cdp],
          ["the leader's worker", leader],
        ]) {
          const { profile } = await s.send('Profiler.stop');
          console.log(`\n${name} during silt ${args.op}s (self time):`);
          printTop(topSelf(profile, args.top, null));
          const ops = args.op === 'get32' ? Math.max(1, Math.round(args.gets / 32)) : args.gets;
          console.log(`\n${name} during silt ${args.op}s (total time, µs per ${args.op === 'get32' ? 'group' : 'call'}):`);
          for (const [fn, ms] of topTotal(profile, args.top)) console.log(`  ${((1000 * ms) / ops).toFixed(1).padStart(7)}  ${fn}`);
        }
      }
      await page.evaluate(() => window.__profilePage.db.close());
    },
    { timeoutMin: args['timeout-min'], log },
  );
}

/**
 * A session with the worker whose URL contains `part` (and passes `also`),
 * over the page's CDP session: Playwright has none for workers, so the
 * worker's protocol goes through `Target.sendMessageToTarget`.
 */
async function workerSession(cdp, part, also = () => true) {
  const { targetInfos } = await cdp.send('Target.getTargets');
  const target = targetInfos.find((t) => t.type === 'worker' && t.url.includes(part) && also(t.url));
  if (target === undefined) throw new Error(`no worker ${part} among ${targetInfos.map((t) => `${t.type} ${t.url}`).join(', ')}`);
  const { sessionId } = await cdp.send('Target.attachToTarget', { targetId: target.targetId, flatten: false });
  let next = 1;
  const waiting = new Map();
  cdp.on('Target.receivedMessageFromTarget', (e) => {
    if (e.sessionId !== sessionId) return;
    const m = JSON.parse(e.message);
    const w = waiting.get(m.id);
    if (w === undefined) return;
    waiting.delete(m.id);
    if (m.error) w.reject(new Error(`${m.error.message} (${m.error.code})`));
    else w.resolve(m.result);
  });
  return {
    send: (method, params = {}) =>
      new Promise((resolve, reject) => {
        const id = next++;
        waiting.set(id, { resolve, reject });
        cdp.send('Target.sendMessageToTarget', { sessionId, message: JSON.stringify({ id, method, params }) }).catch(reject);
      }),
  };
}

runMain(main, log);
