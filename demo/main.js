// The page: starts the worker, asks it for runs, shows what it reports.
// The engine runs in the worker because its calls are synchronous.

const $ = (id) => document.getElementById(id);
const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });

function showError(message) {
  document.body.dataset.state = 'error';
  $('status').textContent = 'Failed';
  $('error').hidden = false;
  $('error').textContent = message;
  $('run').disabled = false;
}

function ms(x) {
  return `${x.toFixed(1)} ms`;
}

function perSecond(count, millis) {
  return millis > 0 ? `${Math.round((count * 1000) / millis).toLocaleString('en-US')} ops/s` : '–';
}

function render(r) {
  $('written').textContent = r.written.toLocaleString('en-US');
  $('write-time').textContent = `${ms(r.writeMs)} (${perSecond(r.written, r.writeMs)})`;
  $('reads-done').textContent = r.reads.toLocaleString('en-US');
  const verified = $('verified');
  verified.textContent = `${r.verified.toLocaleString('en-US')} of ${r.reads.toLocaleString('en-US')}`;
  verified.className = r.verified === r.reads ? 'ok' : 'bad';
  $('read-time').textContent = `${ms(r.readMs)} (${perSecond(r.reads, r.readMs)})`;
  $('deleted-get').textContent = r.deletedGet;
  $('missing-get').textContent = r.missingGet;
  const body = $('sample').tBodies[0];
  body.replaceChildren(
    ...r.sample.map(([key, value]) => {
      const row = document.createElement('tr');
      for (const cell of [key, value]) {
        const td = document.createElement('td');
        td.textContent = cell;
        row.append(td);
      }
      return row;
    }),
  );
}

worker.addEventListener('message', ({ data }) => {
  switch (data.type) {
    case 'ready':
      $('simd').textContent = data.simd128 ? 'on' : 'off';
      $('simd').className = data.simd128 ? 'ok' : 'bad';
      $('run').disabled = false;
      $('status').textContent = 'Ready';
      document.body.dataset.state = 'ready';
      run();
      break;
    case 'result':
      render(data.result);
      $('status').textContent = 'Done';
      $('run').disabled = false;
      document.body.dataset.state = 'done';
      break;
    case 'error':
      showError(`${data.code}: ${data.message}`);
      break;
  }
});
worker.addEventListener('error', (event) => {
  event.preventDefault();
  showError(`worker failed: ${event.message || 'could not load worker.js'}`);
});

function run() {
  const n = Number($('records').value);
  const reads = Number($('reads').value);
  $('run').disabled = true;
  $('error').hidden = true;
  $('status').textContent = 'Running…';
  document.body.dataset.state = 'running';
  worker.postMessage({ type: 'run', n, reads });
}

// ?n=… and ?reads=… preset the form (the browser tests use them).
const params = new URLSearchParams(location.search);
for (const [param, id] of [['n', 'records'], ['reads', 'reads']]) {
  if (params.has(param)) $(id).value = params.get(param);
}
$('run-form').addEventListener('submit', (event) => {
  event.preventDefault();
  run();
});
