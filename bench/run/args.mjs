// The one argument parser of the benchmark runners (bench/run/*.mjs).
//
// `parseArgs(process.argv.slice(2), flags, usage)` takes `--name value` or
// `--name=value` for every flag in `flags` (name → default). The default's
// type says how a value is read: a number must be a non-negative integer
// (underscores allowed: 1_000_000), a string is kept as it is, and a
// boolean flag takes no value (its presence sets it). `--help` prints the
// usage and exits; anything else is an error that names the flag.

/** Parses `argv` against `flags`; returns every flag with its value. */
export function parseArgs(argv, flags, usage) {
  const out = { ...flags };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--help' || a === '-h') {
      console.log(usage);
      process.exit(0);
    }
    const m = /^--([a-z0-9-]+)(?:=(.*))?$/.exec(a);
    if (!m || !(m[1] in flags)) throw new Error(`unknown argument ${JSON.stringify(a)}\n${usage}`);
    const name = m[1];
    if (typeof flags[name] === 'boolean') {
      if (m[2] !== undefined) throw new Error(`--${name} takes no value\n${usage}`);
      out[name] = true;
      continue;
    }
    const v = m[2] ?? argv[++i];
    if (v === undefined) throw new Error(`--${name} needs a value\n${usage}`);
    if (typeof flags[name] === 'number') {
      const n = Number(v.replace(/_/g, ''));
      if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a non-negative integer, got ${JSON.stringify(v)}`);
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
