// Vue and Svelte apps for tests/e2e/frameworks.spec.ts, bundled there by
// esbuild with Vue, Svelte's runtime and siltdb/vue and siltdb/svelte
// (js/dist); siltdb itself is the page's (served /siltdb/dist/index.js).
// `Notes.svelte` is compiled by the spec (svelte/compiler) and bundled in
// through the `notes-svelte` path it resolves. Each app shows the first
// three keys of `k/` and one key's value, counting its renders.
import { mount, unmount } from 'svelte';
import { createApp, h } from 'vue';
import { getStore, liveStore } from '../../js/dist/svelte.js';
import { useGet, useLive } from '../../js/dist/vue.js';
import Notes from 'notes-svelte';

const dec = new TextDecoder();
const list = (r) => (r === undefined ? 'loading' : r.entries.map(([k, v]) => `${dec.decode(k)}=${dec.decode(v)}`).join(' '));
const one = (r) => (r === undefined ? 'loading' : r.value === undefined ? '-' : dec.decode(r.value));

export function mountVue(db) {
  const state = { renders: 0 };
  const el = document.createElement('div');
  el.id = 'vue';
  document.body.append(el);
  const app = createApp({
    setup() {
      const { data: notes } = useLive(db, { gte: 'k/', lt: 'k0', limit: 3 });
      const { data: k2 } = useGet(db, 'k/2');
      return () => {
        state.renders++;
        return h('div', null, [h('p', { class: 'list' }, list(notes.value)), h('p', { class: 'one' }, one(k2.value))]);
      };
    },
  });
  app.mount(el);
  return { state, unmount: () => app.unmount() };
}

export function mountSvelte(db) {
  const el = document.createElement('div');
  el.id = 'svelte';
  document.body.append(el);
  const props = { notes: liveStore(db, { gte: 'k/', lt: 'k0', limit: 3 }), k2: getStore(db, 'k/2'), list, one };
  const c = mount(Notes, { target: el, props });
  return { unmount: () => unmount(c) };
}
