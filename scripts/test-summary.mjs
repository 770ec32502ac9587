// Adds up the test counts of the suites run by scripts/test.sh, from their
// machine-readable reports (cargo's text summary lines, vitest's and
// Playwright's JSON), and prints one line per suite and a total.
// Exits non-zero if a report is missing or any test failed or was skipped.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2] ?? 'target/test-results';
const rows = [];
/** Failed tests by name, with the first line of their error: printed last, so that a CI log's tail says which. */
const failures = [];
/**
 * The first line of an error and, where it is an assertion's bare
 * `expect(...)` line, its Expected/Received lines too: up to 3 lines, 300
 * characters each, joined by ' | '.
 */
const firstLine = (message) => {
  const lines = String(message ?? '')
    .replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g'), '')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  const head = lines[0] ?? '';
  const values = /expect\(/.test(head) ? lines.filter((l) => /^(Expected|Received)\b/.test(l)).slice(0, 2) : [];
  return [head, ...values].map((l) => l.slice(0, 300)).join(' | ');
};
let problems = 0;

function read(file) {
  try {
    return readFileSync(join(dir, file), 'utf8');
  } catch {
    return undefined;
  }
}

function add(suite, counts) {
  if (!counts) {
    rows.push({ suite, note: 'no report (the suite did not run to the end)' });
    problems++;
    return;
  }
  rows.push({ suite, ...counts });
  if (counts.failed > 0 || counts.skipped > 0 || counts.passed === 0) problems++;
}

function cargo(text) {
  if (text === undefined) return undefined;
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  let seen = false;
  for (const m of text.matchAll(/test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored/g)) {
    seen = true;
    passed += Number(m[1]);
    failed += Number(m[2]);
    skipped += Number(m[3]);
  }
  return seen ? { passed, failed, skipped } : undefined;
}

function vitest(text) {
  if (text === undefined) return undefined;
  const r = JSON.parse(text);
  for (const file of r.testResults ?? []) {
    if (file.status === 'failed' && (file.assertionResults ?? []).length === 0) failures.push(`vitest ${file.name}: ${firstLine(file.message)}`);
    for (const t of file.assertionResults ?? []) {
      if (t.status === 'failed') failures.push(`vitest ${t.fullName}: ${firstLine(t.failureMessages?.[0])}`);
    }
  }
  return {
    passed: r.numPassedTests,
    failed: r.numFailedTests + (r.numRuntimeErrorTestSuites ?? 0),
    skipped: r.numPendingTests + r.numTodoTests,
  };
}

function playwright(text) {
  if (text === undefined) return undefined;
  const { stats, errors = [], suites = [] } = JSON.parse(text);
  const walk = (suite, path) => {
    for (const spec of suite.specs ?? []) {
      for (const t of spec.tests ?? []) {
        if (t.status === 'expected' || t.status === 'skipped') continue;
        const error = (t.results ?? []).flatMap((r) => r.errors ?? [r.error]).find((e) => e?.message);
        failures.push(`playwright ${[...path, spec.title].join(' › ')} (${t.status}): ${firstLine(error?.message)}`);
      }
    }
    for (const s of suite.suites ?? []) walk(s, [...path, s.title]);
  };
  for (const s of suites) walk(s, [s.title]);
  for (const e of errors) failures.push(`playwright: ${firstLine(e.message)}`);
  return {
    passed: stats.expected,
    failed: stats.unexpected + stats.flaky + errors.length,
    skipped: stats.skipped,
  };
}

function browserRun(text) {
  if (text === undefined) return undefined;
  const { browser, passed, failed, skipped, results = [] } = JSON.parse(text);
  for (const t of results) if (t.ok === false) failures.push(`${browser} ${t.name}: ${firstLine(t.error)}`);
  return { passed, failed, skipped };
}

add('cargo test', cargo(read('cargo.log')));
add('cargo test (wasm32-wasip1)', cargo(read('cargo-wasm.log')));
add('vitest', vitest(read('vitest.json')));
add('playwright', playwright(read('playwright.json')));
add('firefox', browserRun(read('firefox.json')));
add('webkit', browserRun(read('webkit.json')));

const total = { passed: 0, failed: 0, skipped: 0 };
for (const row of rows) {
  if (row.note) {
    console.log(`${row.suite}: ${row.note}`);
    continue;
  }
  console.log(`${row.suite}: ${row.passed} passed, ${row.failed} failed, ${row.skipped} skipped`);
  for (const k of Object.keys(total)) total[k] += row[k];
}
if (total.skipped > 0) console.log('skipped or ignored tests are not allowed: make them run, or delete them');
if (failures.length > 0) {
  console.log('failed:');
  for (const f of failures) console.log(`  ${f}`);
}
console.log(`tests: ${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped`);
process.exit(problems === 0 ? 0 : 1);
