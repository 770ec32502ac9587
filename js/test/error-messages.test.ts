// Issue 41: every error a JavaScript user can meet speaks JavaScript. Each
// code of SILT_ERROR_CODES is raised by one scenario (as an app meets it,
// where Node can make it happen; by the package's own constructor where only
// a browser can), and its message is checked for a next step (a verb that
// says what to do) and for words only Rust has (snake_case option names,
// `Options::`, Rust types). A code added to the list without a scenario
// here fails the test.
import { expect, test } from 'vitest';
import { fromWasm, SILT_ERROR_CODES, type SiltError, type SiltErrorCode } from '../src/core/errors.js';
import { openMemory, u64, WriteBatch } from '../src/index.js';
import { openOn, type StorageEnv } from '../src/local/open.js';
import { repairOn } from '../src/local/repair.js';
import { leaderChanged } from '../src/tabs/connection-errors.js';
import { PROTOCOL, versionMismatch } from '../src/tabs/protocol.js';
import { initFailed } from '../src/boundary/wasm.js';
import { domError, FakeDirectory, FakeLocks } from './fakes.js';
import { bytes, refusal } from './helpers.js';

const fakeEnv = (): StorageEnv & { root: FakeDirectory } => ({ root: new FakeDirectory(), locks: new FakeLocks() });

/** A verb of a next step, after the message says what went wrong. */
const NEXT_STEP =
  /\b(open|use|pass|call|close|await|retry|give|leave|swap|check|delete|remove|slice|run|free|ask|reopen|encode|wait|connect|serve|report|reload|release|export|convert|sort|split|take|abort|commit|repair|store|let)\b/;
/** Words a JavaScript user should never read: Rust options and types. */
const RUST_ONLY = /\b[a-z]+_[a-z_]+\b(?!\.wasm)|::|\bSome\(|\bNone\b|\bVec<|\busize\b|\bBlobIndex\b/;

/** The error of importing a backup of 100 keys that `damage` changed. */
async function importOf(damage: (all: Uint8Array) => Uint8Array): Promise<SiltError> {
  const src = await openMemory();
  const dst = await openMemory();
  try {
    for (let i = 0; i < 100; i++) src.put(`k${i}`, bytes(`v${i}`));
    const all = new Uint8Array(await new Response(src.export()).arrayBuffer());
    return await refusal(() => dst.import(damage(all)));
  } finally {
    src.close();
    dst.close();
  }
}

/** One scenario per code: the error an app meets. */
const SCENARIOS: Record<SiltErrorCode, () => Promise<SiltError>> = {
  async InvalidArgument() {
    const db = await openMemory();
    try {
      return await refusal(() => db.merge('k', u64(1)));
    } finally {
      db.close();
    }
  },
  async NotSupported() {
    // Merge operands read back by a database opened without the operator they were written with.
    const env = fakeEnv();
    const a = await openOn(env, 'counters', { mergeOperator: 'u64add' });
    a.merge('n', u64(1));
    a.close();
    const b = await openOn(env, 'counters');
    try {
      return await refusal(() => b.get('n'));
    } finally {
      b.close();
    }
  },
  async Corruption() {
    // A backup cut short.
    return importOf((all) => all.subarray(0, all.length - 9));
  },
  async ChecksumMismatch() {
    // A backup with one byte changed.
    return importOf((all) => {
      all[all.length >> 1]! ^= 0xff;
      return all;
    });
  },
  async IoError() {
    const env = fakeEnv();
    const db = await openOn(env, 'io');
    db.put('k', bytes('v'));
    db.close();
    let failures = 1;
    env.root.faults.hook = (op, name) => {
      if (op === 'read' && name === '000001.pool' && failures-- > 0) throw domError('InvalidStateError', 'injected');
    };
    return refusal(() => openOn(env, 'io'));
  },
  async QuotaExceeded() {
    const db = await openOn(fakeEnv(), 'capped', { maxBytes: 1 << 20 });
    try {
      return await refusal(async () => {
        for (let i = 0; ; i++) {
          db.put(`k${i}`, new Uint8Array(1000));
          if (i % 50 === 0) await db.idle();
        }
      });
    } finally {
      db.close();
    }
  },
  async PoolExhausted() {
    const db = await openOn(fakeEnv(), 'burst', { poolReserve: 4, writeBufferSize: 65536 });
    try {
      return await refusal(() => {
        for (let i = 0; ; i++) db.put(`k${i}`, new Uint8Array(4096));
      });
    } finally {
      db.close();
    }
  },
  async Busy() {
    const db = await openMemory();
    const src = await openMemory();
    const s = db.snapshot();
    try {
      src.put('a', bytes('1'));
      return await refusal(() => db.import(src.export()));
    } finally {
      s.release();
      db.close();
      src.close();
    }
  },
  async Closed() {
    const db = await openMemory();
    db.close();
    return refusal(() => db.get('k'));
  },
  async NotFound() {
    return refusal(() => openOn(fakeEnv(), 'nothing', { createIfMissing: false }));
  },
  async AlreadyExists() {
    const env = fakeEnv();
    (await openOn(env, 'made')).close();
    return refusal(() => openOn(env, 'made', { errorIfExists: true }));
  },
  async Released() {
    const db = await openMemory();
    try {
      const s = db.snapshot();
      s.release();
      return await refusal(() => db.get('k', { snapshot: s }));
    } finally {
      db.close();
    }
  },
  async Conflict() {
    const db = await openMemory();
    try {
      const tx = db.begin();
      tx.getForUpdate('k');
      db.put('k', bytes('theirs'));
      tx.put('k', bytes('mine'));
      return await refusal(() => tx.commit());
    } finally {
      db.close();
    }
  },
  async DatabaseLocked() {
    const env = fakeEnv();
    const db = await openOn(env, 'held');
    try {
      return await refusal(() => openOn(env, 'held'));
    } finally {
      db.close();
    }
  },
  async InitFailed() {
    // Only a browser that cannot fetch the module meets it (wasm-load.test.ts
    // makes it happen); the error loadWasm() throws then.
    return initFailed('failed to fetch');
  },
  async Internal() {
    return fromWasm(new WebAssembly.RuntimeError('unreachable'));
  },
  async LeaderChanged() {
    // Through connect() only, when the tab that led goes (tabs-failover.test.ts).
    return leaderChanged('this snapshot');
  },
  async VersionMismatch() {
    // Through connect() only, when another tab runs another siltdb (tabs-versions.test.ts).
    return versionMismatch(PROTOCOL, PROTOCOL - 1, 'notes');
  },
};

test('every error code has a scenario, and its message says what to do, in JavaScript', async () => {
  expect(Object.keys(SCENARIOS).sort()).toEqual([...SILT_ERROR_CODES].sort());
  const bad: string[] = [];
  for (const code of SILT_ERROR_CODES) {
    const e = await SCENARIOS[code]();
    expect(e.code, `${code}: ${e.message}`).toBe(code);
    if (!NEXT_STEP.test(e.message)) bad.push(`${code} gives no next step: ${e.message}`);
    const rust = RUST_ONLY.exec(e.message);
    if (rust !== null) bad.push(`${code} names ${rust[0]}: ${e.message}`);
  }
  expect(bad).toEqual([]);
});

test('the messages the issue found: merge and reads without a merge operator, a string value, a lock held by connect() pages, an existing database', async () => {
  expect((await SCENARIOS.InvalidArgument()).message).toMatch(/open it with \{ mergeOperator: 'u64add' \}/);
  expect((await SCENARIOS.NotSupported()).message).toMatch(/open it with the mergeOperator it was written with/);
  const db = await openMemory();
  try {
    expect((await refusal(() => db.put('k', 'text' as never))).message).toMatch(/open it with \{ valueEncoding: 'utf8' \}/);
    expect((await refusal(() => db.merge('k', 'one' as never))).message).toMatch(/u64\(n\) makes one/);
    expect((await refusal(() => db.write(new WriteBatch().merge('k', u64(1))))).message).toMatch(/mergeOperator/);
    const tx = db.begin();
    expect((await refusal(() => tx.merge('k', u64(1)))).message).toMatch(/mergeOperator/);
    tx.abort();
  } finally {
    db.close();
  }
  expect((await SCENARIOS.DatabaseLocked()).message).toMatch(/call connect\("held"\) everywhere/);
  const exists = await SCENARIOS.AlreadyExists();
  expect(exists.message).toMatch(/^database "made" already exists and errorIfExists is true: open it without errorIfExists/);
  expect((await SCENARIOS.NotFound()).message).toMatch(/^database "nothing" does not exist \(createIfMissing is false\)/);
  expect((await refusal(() => repairOn(fakeEnv(), 'nope'))).message).toMatch(/nothing to repair: check the name/);
  expect((await refusal(() => openMemory({ createIfMissing: false }))).message).toMatch(/^openMemory\(\) makes a new database each time/);
  const full = await openMemory();
  const source = await openMemory();
  try {
    full.put('k', bytes('v'));
    source.put('a', bytes('1'));
    const e = await refusal(() => full.import(source.export()));
    expect(e.message).toMatch(/import\(\) fills an empty database, and this one is not empty: importDatabase\(name, source\) makes a new one/);
    expect((await refusal(() => full.put(new Uint8Array(70_000), bytes('v')))).message).toMatch(/keep keys short and put large data in the value$/);
  } finally {
    full.close();
    source.close();
  }
  const counters = await openMemory({ mergeOperator: 'u64add' });
  try {
    expect((await refusal(() => counters.merge('n', new Uint8Array(4)))).message).toMatch(/operand of 4 bytes, not 8: .* made with u64\(n\)$/);
  } finally {
    counters.close();
  }
});

test('damage is told apart by where it was found: a backup, merge operands of another operator, the database itself', async () => {
  // A damaged backup is the input's: the database is fine.
  for (const e of [await SCENARIOS.Corruption(), await SCENARIOS.ChecksumMismatch()]) {
    expect(e.message).toMatch(/the backup is damaged, cut short or not a siltdb export: nothing of it was imported/);
    expect(e.message).not.toMatch(/repairDatabase/);
  }
  // Operands written under 'append', read under 'u64add'.
  const env = fakeEnv();
  const a = await openOn(env, 'log', { mergeOperator: 'append' });
  a.merge('k', bytes('x'));
  a.close();
  const b = await openOn(env, 'log', { mergeOperator: 'u64add' });
  try {
    const e = await refusal(() => b.get('k'));
    expect(e.code).toBe('Corruption');
    expect(e.message).toMatch(/open the database with the mergeOperator it was written with$/);
  } finally {
    b.close();
  }
  // Damage of the database's own files points to repairDatabase().
  const own = fromWasm(Object.assign(new Error('checksum mismatch in db/000012.sst at offset 4096: expected 0x1, got 0x2'), { code: 'ChecksumMismatch' }));
  expect(own.message).toMatch(/; the database is damaged: repairDatabase\(\) rebuilds it/);
});
