// siltdb's leader worker (js/dist/worker.modules.js: tsc's unbundled modules), or the worker module named
// by `?module=` (the floor's map-worker.js), with clocks around each
// message it serves, for bench/run/profile-page.mjs: the time from a
// message's event to the answer posted (the worker's whole part of a call),
// and the post itself, summed, and the OPFS writes made on the way (a
// sync access handle's write: count, bytes, time). `{ t: 'bench-timing' }` answers the sums and resets them.
// Messages that arrive while siltdb's worker module still loads (its
// listener is not there yet) wait here, and are dispatched again after.
const sums = { messages: 0, servedMs: 0, postMs: 0, toReceiveMs: 0, getMs: 0, writeMs: 0, fileMs: 0, fileWrites: 0, fileBytes: 0 };
let received = 0;
let arrived = 0;
let early = [];
self.addEventListener('message', (event) => {
  const { data } = event;
  if (early !== undefined && data?.t !== 'bench-timing') {
    event.stopImmediatePropagation();
    early.push(event);
    return;
  }
  if (data?.t === 'bench-timing') {
    event.stopImmediatePropagation();
    self.postMessage({ t: 'bench-timing', ...sums });
    for (const k of Object.keys(sums)) sums[k] = 0;
    return;
  }
  arrived = performance.now();
});
const timed = (proto, name, sum) => {
  const f = proto[name];
  proto[name] = function (...a) {
    const t0 = performance.now();
    try {
      return f.apply(this, a);
    } finally {
      sums[sum] += performance.now() - t0;
    }
  };
};
const post = self.postMessage.bind(self);
self.postMessage = (m, transfer) => {
  if (m?.t === 'bench-timing') return post(m);
  const answers = !siltdb || Array.isArray(m) || (m !== null && typeof m === 'object' && 'id' in m);
  const t0 = performance.now();
  post(m, transfer);
  if (answers && arrived !== 0) {
    const t1 = performance.now();
    sums.messages++;
    sums.servedMs += t0 - arrived;
    sums.postMs += t1 - t0;
    arrived = 0;
  }
};
// The OPFS writes (siltdb's engine's: its write-ahead log's append; the floor's putLogged).
if (typeof FileSystemSyncAccessHandle === 'function') {
  timed(FileSystemSyncAccessHandle.prototype, 'write', 'fileMs');
  const w = FileSystemSyncAccessHandle.prototype.write;
  FileSystemSyncAccessHandle.prototype.write = function (b, o) {
    sums.fileWrites++;
    sums.fileBytes += b.byteLength;
    return w.call(this, b, o);
  };
}
const params = new URL(self.location.href).searchParams;
const module = params.get('module');
// `?dist=`: siltdb's modules from another build (profile-page.mjs --ab).
const dist = params.get('dist') ?? '/siltdb/dist/';
const siltdb = module === null;
if (siltdb) {
  // Finer clocks inside siltdb's leader: the message to Leader.receive, and the engine's get.
  const { Leader } = await import(`${dist}tabs/leader.js`);
  const receive = Leader.prototype.receive;
  Leader.prototype.receive = function (...a) {
    received = performance.now();
    sums.toReceiveMs += received - arrived;
    return receive.apply(this, a);
  };
  const { Database } = await import(`${dist}local/database.js`);
  timed(Database.prototype, 'get', 'getMs');
  timed(Database.prototype, 'multiGet', 'getMs');
  timed(Database.prototype, 'write', 'writeMs');
}
// tsc's modules of the worker (js/scripts/bundle.mjs keeps them as
// worker.modules.js), whose classes are the ones patched above.
await import(module ?? `${dist}worker.modules.js`);
const waited = early;
early = undefined;
for (const e of waited) self.dispatchEvent(new MessageEvent('message', { data: e.data, ports: [...e.ports] }));
