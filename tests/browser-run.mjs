// What the browser suites outside Playwright share (tests/firefox/run.mjs,
// tests/webkit/run.mjs): a watchdog, the demo server with the test pages,
// running named checks one after another, and the JSON report that
// scripts/test-summary.mjs totals.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('../', import.meta.url));

/** `--only <part of a check's name>` from the command line. */
export const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined;

/** Child processes to kill when this process ends, however it ends. */
const children = new Set();

/**
 * Kills `child` (its whole process group with `group`, for a child started
 * `detached`) when this process exits, a watchdog's exit included.
 */
export function adopt(child, group = false) {
  const entry = { child, group };
  children.add(entry);
  child.on('exit', () => children.delete(entry));
  return child;
}

process.on('exit', () => {
  for (const { child, group } of children) {
    try {
      process.kill(group ? -child.pid : child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

/** Ends the process if the run takes longer than `minutes`; cancel with clearTimeout. */
export function watchdog(suite, minutes) {
  const timer = setTimeout(() => {
    console.error(`${suite}: the run took over ${minutes} minutes; stopping it`);
    process.exit(2);
  }, minutes * 60_000);
  timer.unref();
  return timer;
}

/** Starts the demo server with the test pages on `port`; resolves once it listens. */
export function startServer(port) {
  const server = adopt(
    spawn(process.execPath, [join(root, 'demo/server.mjs')], {
      env: { ...process.env, PORT: String(port), SILT_TEST_PAGES: '1' },
      stdio: ['ignore', 'pipe', 'inherit'],
    }),
  );
  return new Promise((resolve, reject) => {
    server.on('exit', (code) => reject(new Error(`the demo server exited with ${code}`)));
    server.stdout.on('data', (d) => {
      if (String(d).includes('Silt demo')) resolve(server);
    });
  });
}

/**
 * Runs each check (`name → async (arg) => void`, throwing on failure) whose
 * name contains `only`, printing ✓ or ✘ with the error; `after(name)` runs
 * after each, and `context()` adds what to print and keep with a failure.
 */
export async function runChecks(checks, arg, { after, context } = {}) {
  const results = [];
  for (const [name, check] of Object.entries(checks)) {
    if (only !== undefined && !name.includes(only)) continue;
    const t0 = performance.now();
    try {
      await check(arg);
      results.push({ name, ok: true, ms: performance.now() - t0 });
      console.log(`  ✓ ${name} (${Math.round(performance.now() - t0)} ms)`);
    } catch (e) {
      const extra = context?.();
      results.push({ name, ok: false, ms: performance.now() - t0, error: String(e?.stack ?? e), ...(extra === undefined ? {} : { context: extra }) });
      const text = `${String(e?.message ?? e)}${extra === undefined ? '' : `\n${extra}`}`;
      console.log(`  ✘ ${name}\n    ${text.split('\n').join('\n    ')}`);
    } finally {
      await after?.(name);
    }
  }
  return results;
}

/** Writes target/test-results/<suite>.json and returns the exit code. */
export function writeReport(suite, results, seen) {
  const passed = results.filter((r) => r.ok).length;
  const failed = results.length - passed;
  mkdirSync(join(root, 'target/test-results'), { recursive: true });
  writeFileSync(join(root, `target/test-results/${suite}.json`), JSON.stringify({ browser: suite, passed, failed, skipped: 0, seen, results }, null, 2));
  return failed === 0 && passed > 0 ? 0 : 1;
}
