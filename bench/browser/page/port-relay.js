// A SharedWorker that hands a MessagePort from one tab to another (the
// follower measurement of bench/run/page.mjs): the tab that leads says
// `host`; a port another tab sends (`{ port }`) goes to it. The floor of a
// follower's call then takes the path siltdb's broker gives a follower: a
// MessagePort from its page straight to a worker of the leading tab.
let host;
const early = [];
self.onconnect = ({ ports: [p] }) => {
  p.onmessage = ({ data }) => {
    if (data === 'host') {
      host = p;
      for (const port of early.splice(0)) host.postMessage({ port }, [port]);
    } else if (data?.port) {
      if (host === undefined) early.push(data.port);
      else host.postMessage({ port: data.port }, [data.port]);
    }
  };
};
