// The one description of where a benchmark ran, for every runner in
// bench/run: the machine, the date, the load other work put on it, and (for
// browser runs) the browser. Every result file carries it, in JSON and in
// the Markdown's header.
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import { executablePath } from '../../scripts/browser.mjs';

/** "Intel(R) Xeon(R) Processor, 2 cores, 23.5 GiB, linux 6.1.0; Node v20.20.2". */
export function machineText() {
  const cpus = os.cpus();
  return (
    `${cpus[0]?.model ?? os.arch()}, ${cpus.length} cores, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB, ` +
    `${os.platform()} ${os.release()}; Node ${process.version}`
  );
}

/** Debian's Chromium as `--version` prints it, or 'unknown'. */
export function chromiumVersion() {
  try {
    return execFileSync(executablePath, ['--version'], { encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'unknown';
  }
}

/**
 * Starts describing a run: call at its start; `finish()` at its end gives
 * `{ machine, date, load, command }` (the load average at both ends: these
 * machines are shared, and other work skews every figure).
 */
export function startRun(command) {
  const loadAtStart = os.loadavg()[0];
  const date = new Date().toISOString();
  return {
    finish(extra = {}) {
      return {
        machine: machineText(),
        date,
        load: `${loadAtStart.toFixed(1)} at the start, ${os.loadavg()[0].toFixed(1)} at the end (1-minute load average, ${os.cpus().length} cores)`,
        command,
        ...extra,
      };
    },
  };
}

/** The header lines every Markdown result carries (results written before `load` and `command` were kept lack them). */
export function metaMarkdown(meta) {
  return (
    (meta.browser ? `Browser: ${meta.browser}.\n\n` : '') +
    `Machine: ${meta.machine}${meta.load ? `; shared with other work while this ran: load ${meta.load}` : ''}.\n\n` +
    `Date: ${meta.date}.\n` +
    (meta.command ? `\nReproduce: \`${meta.command}\`\n` : '')
  );
}
