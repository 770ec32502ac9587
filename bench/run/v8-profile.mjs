// What a V8 CPU profile (the Profiler domain of the inspector protocol, from
// Node or from Chromium over CDP) says about where time went: the functions
// with the most self time.

/**
 * The `top` functions with the most self time, as shares of the profile.
 * Samples under `skipUrl` (Node's own inspector, which serializes the
 * profile) are not the workload's and are left out.
 */
export function topSelf(profile, top, skipUrl = 'node:inspector') {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const skipped = (id) => {
    for (let n = byId.get(id); n !== undefined; n = byId.get(parent.get(n.id))) {
      if (n.callFrame.url === skipUrl) return true;
    }
    return false;
  };
  const self = new Map();
  let total = 0;
  profile.samples.forEach((id, i) => {
    if (skipped(id)) return;
    const f = byId.get(id).callFrame;
    const where = f.url ? ` (${f.url.split('/').pop()})` : '';
    const key = `${f.functionName || '(anonymous)'}${where}`.replace(/::h[0-9a-f]{16}/, '');
    const dt = profile.timeDeltas[i] ?? 0;
    self.set(key, (self.get(key) ?? 0) + dt);
    total += dt;
  });
  return [...self.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([k, v]) => [k, v / total]);
}

/** Prints `topSelf` as "  12.3%  function (file)" lines. */
export function printTop(entries) {
  for (const [fn, share] of entries) console.log(`  ${(share * 100).toFixed(1).padStart(5)}%  ${fn}`);
}

/**
 * The `top` functions with the most total time (their own and their
 * callees'), in ms summed over the profile (idle and the profiler's own
 * samples left out).
 */
export function topTotal(profile, top) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const keyOf = (f) => `${f.functionName || '(anonymous)'}${f.url ? ` (${f.url.split('/').pop()})` : ''}`.replace(/::h[0-9a-f]{16}/, '');
  const total = new Map();
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    const seen = new Set();
    for (let n = byId.get(id); n !== undefined; n = byId.get(parent.get(n.id))) {
      const k = keyOf(n.callFrame);
      if (k === '(idle)' || k === '(root)' || seen.has(k)) continue;
      seen.add(k);
      total.set(k, (total.get(k) ?? 0) + dt);
    }
  });
  return [...total.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([k, v]) => [k, v / 1000]);
}
