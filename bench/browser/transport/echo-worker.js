// The transport benchmark's far end (bench/run/tabs.mjs): a dedicated worker
// that answers every message with itself, over its own port, over the
// BroadcastChannel 'siltdb-bench-echo', and over any MessagePort it is given.
const bc = new BroadcastChannel('siltdb-bench-echo');
bc.onmessage = (e) => bc.postMessage(e.data);
self.onmessage = (e) => {
  const port = e.data?.port;
  if (port) {
    port.onmessage = (m) => port.postMessage(m.data);
    return;
  }
  self.postMessage(e.data);
};
