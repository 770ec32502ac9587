// Merges: an operand written with no read, combined with the value by the
// database's merge operator when read ('u64add', 'append').
import { eq, fails, ok } from './check.js';
import { bytes, scenario, text } from './scenario.js';

export default [
  scenario('u64add counts without reading, in puts, batches and transactions; u64 and readU64 round-trip', async (t) => {
    const db = await t.open({ mergeOperator: 'u64add' });
    const { u64, readU64 } = t.lib;
    for (let i = 0; i < 10; i++) await db.merge('c', u64(1));
    await db.merge('c', u64(-3));
    eq(readU64(await db.get('c')), 7n, 'ten ones and a minus three');
    await db.write(
      db
        .batch()
        .merge('c', u64(3))
        .merge('d', u64(2n ** 64n - 1n)),
    );
    eq([readU64(await db.get('c')), readU64(await db.get('d'))], [10n, 2n ** 64n - 1n], 'after a batch of merges');
    await db.flush();
    await db.merge('c', u64(5));
    eq(readU64(await db.get('c')), 15n, 'a merge over a flushed value');
    await db.transaction((tx) => tx.merge('c', u64(1)));
    eq(readU64(await db.get('c')), 16n, 'a merge in a transaction');
    // A bad operand is refused when written, naming the operator.
    const e = await fails(() => db.merge('c', bytes('abc')), 'InvalidArgument');
    ok(e.message.includes('u64add'), `the message names the operator: ${e.message}`);
    await fails(() => db.write(db.batch().put('x', bytes('1')).merge('c', bytes('abc'))), 'InvalidArgument');
    eq(await db.get('x'), undefined, 'the put of a batch with a bad operand');
    await fails(() => u64(1.5), 'InvalidArgument');
    await fails(() => u64(2n ** 64n), 'InvalidArgument');
    await fails(() => readU64(bytes('abc')), 'InvalidArgument');
    eq(readU64(u64(-1)), 2n ** 64n - 1n, 'u64(-1)');
  }),

  scenario('append appends; without a merge operator merge is refused; an unknown operator is refused', async (t) => {
    const db = await t.open({ mergeOperator: 'append' });
    await db.put('log', bytes('a'));
    await db.merge('log', bytes('b'));
    await db.write(db.batch().merge('log', bytes('c')).merge('log', bytes('')));
    eq(text(await db.get('log')), 'abc', 'appended');
    const plain = await t.open();
    await fails(() => plain.merge('log', bytes('x')), 'InvalidArgument', /open it with \{ mergeOperator: 'u64add' \}/);
    await fails(() => t.open({ mergeOperator: 'sum' }), 'InvalidArgument');
  }),
];
