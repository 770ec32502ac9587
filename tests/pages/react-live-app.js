// A React app for tests/e2e/react.spec.ts, bundled there by esbuild with
// React (development build: StrictMode's double mounts and renders) and
// siltdb/react (js/dist/react.js); siltdb itself is the page's (served
// /siltdb/dist/index.js). `mount(db, count)` renders, in StrictMode, a list
// (`useLive` of the first five keys of `k/`) and `count` items, each
// `useGet` of its own key, counting each component's renders.
import { Component, createElement as h, StrictMode, Suspense } from 'react';
import { createRoot } from 'react-dom/client';
import { useGet, useLive } from '../../js/dist/react.js';

const dec = new TextDecoder();
const key = (i) => `k/${String(i).padStart(4, '0')}`;

export function mount(db, count) {
  const renders = { items: new Array(count).fill(0), list: 0 };
  const shown = { items: new Array(count).fill(undefined), list: undefined };
  function Item({ i }) {
    renders.items[i]++;
    const got = useGet(db, key(i));
    shown.items[i] = got === undefined ? 'loading' : got.value === undefined ? '-' : dec.decode(got.value);
    return h('li', null, shown.items[i]);
  }
  function List() {
    renders.list++;
    const r = useLive(db, { gte: 'k/', lt: 'k0', limit: 5 });
    shown.list = r === undefined ? 'loading' : r.entries.map(([k, v]) => `${dec.decode(k)}=${dec.decode(v)}`).join(' ');
    return h('p', null, shown.list);
  }
  function App() {
    return h(
      'div',
      null,
      h(List),
      h(
        'ul',
        null,
        Array.from({ length: count }, (_, i) => h(Item, { key: i, i })),
      ),
    );
  }
  const el = document.createElement('div');
  document.body.append(el);
  const root = createRoot(el);
  root.render(h(StrictMode, null, h(App)));
  return { renders, shown, unmount: () => root.unmount() };
}

/** A `useGet` with `suspense: true` inside `<Suspense>`: what each of its renders had. */
export function mountSuspense(db) {
  const seen = [];
  function Value() {
    const got = useGet(db, key(1), { suspense: true });
    seen.push(got === undefined ? 'undefined' : dec.decode(got.value));
    return h('b', { id: 'suspended' }, seen.at(-1));
  }
  const el = document.createElement('div');
  document.body.append(el);
  const root = createRoot(el);
  root.render(h(StrictMode, null, h(Suspense, { fallback: h('i', { id: 'fallback' }, 'waiting') }, h(Value))));
  return { seen, unmount: () => root.unmount() };
}

/** A `useGet` whose query fails (a value its json encoding cannot read) inside an error boundary. */
export function mountFailing(db) {
  const j = db.sublevel('j', { valueEncoding: 'json' });
  class Boundary extends Component {
    state = { error: undefined };
    static getDerivedStateFromError(error) {
      return { error };
    }
    render() {
      return this.state.error === undefined ? this.props.children : h('i', { id: 'boundary' }, `failed: ${this.state.error.code}`);
    }
  }
  function Value() {
    const got = useGet(j, 'x');
    return h('b', { id: 'json' }, got === undefined ? 'loading' : JSON.stringify(got.value));
  }
  const el = document.createElement('div');
  document.body.append(el);
  const root = createRoot(el);
  root.render(h(StrictMode, null, h(Boundary, null, h(Value))));
  return { unmount: () => root.unmount() };
}
