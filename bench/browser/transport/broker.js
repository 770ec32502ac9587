// The transport benchmark's SharedWorker (bench/run/tabs.mjs): a broker that
// hands each MessagePort a tab sends it to the tab that said 'lead', which
// passes it on to its worker; after that the two talk over the port alone.
let leader;
self.addEventListener('connect', (e) => {
  const port = e.ports[0];
  port.onmessage = (m) => {
    if (m.data === 'lead') leader = port;
    else if (m.data?.client && leader) leader.postMessage({ client: m.data.client }, [m.data.client]);
  };
});
