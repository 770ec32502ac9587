// The one argument parser of the benchmark runners (bench/run/*.mjs), over
// Node's `util.parseArgs`.
//
// `parseArgs(process.argv.slice(2), flags, usage)` takes `--name value` or
// `--name=value` for every flag in `flags` (name → default). The default's
// type says how a value is read: a number must be a non-negative integer
// (underscores allowed: 1_000_000), a string is kept as it is, and a
// boolean flag takes no value (its presence sets it). `--help` prints the
// usage and exits; anything else is an error that names the flag.

import { parseArgs as parseNodeArgs } from 'node:util';

/** Parses `argv` against `flags`; returns every flag with its value. */
export function parseArgs(argv, flags, usage) {
  const options = { help: { type: 'boolean', short: 'h' } };
  for (const [name, d] of Object.entries(flags)) options[name] = { type: typeof d === 'boolean' ? 'boolean' : 'string' };
  let values;
  try {
    ({ values } = parseNodeArgs({ args: argv, options, strict: true, allowPositionals: false }));
  } catch (e) {
    throw new Error(`${e.message}\n${usage}`);
  }
  if (values.help) {
    console.log(usage);
    process.exit(0);
  }
  const out = { ...flags };
  for (const [name, v] of Object.entries(values)) {
    if (name === 'help') continue;
    if (typeof flags[name] === 'number') {
      const n = Number(v.replace(/_/g, ''));
      if (v === '' || !Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a non-negative integer, got ${JSON.stringify(v)}`);
      out[name] = n;
    } else {
      out[name] = v;
    }
  }
  return out;
}

/** A comma-separated list flag as an array of its non-empty items. */
export const list = (s) =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);

/** Runs `main`, printing a failure (with its stack) and setting the exit status. */
export function runMain(main, log = (m) => process.stderr.write(`${m}\n`)) {
  main().catch((e) => {
    log(e.stack ?? String(e));
    process.exitCode = 1;
  });
}
