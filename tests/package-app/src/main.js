// A fresh app's page: its own worker opens a database with open(), and the
// page itself uses connect(), whose worker comes from inside the package.
// `?hide=<feature>` makes the app's worker hide something siltdb needs
// first (see app-worker.js): open() must then fail with a typed error, or
// (sync access handles) keep the database in IndexedDB; `?require=opfs`
// asks open() for OPFS or nothing.
import { connect } from 'siltdb';

const hide = new URLSearchParams(location.search).get('hide');
const require = new URLSearchParams(location.search).get('require');
const out = {};
const done = () => {
  document.getElementById('out').textContent = JSON.stringify(out);
  document.body.dataset.state = 'done';
};

const worker = new Worker(new URL('./app-worker.js', import.meta.url), { type: 'module' });
worker.onmessage = async ({ data }) => {
  out.worker = data;
  if (hide === null) {
    try {
      const db = await connect('app-connect', { wait: true, signal: AbortSignal.timeout(5_000) });
      await db.put('k', new TextEncoder().encode('via connect'));
      out.connect = new TextDecoder().decode(await db.get('k'));
      await db.close();
    } catch (e) {
      out.connect = `${e.code}: ${e.message}`;
    }
  }
  done();
};
worker.onerror = (e) => {
  out.worker = { error: e.message };
  done();
};
worker.postMessage({ hide, require });
