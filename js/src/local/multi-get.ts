/**
 * `Database.multiGet` (database.ts): the keys written into wasm memory and
 * read with one call; with bytes values a result pinning them together,
 * with another value encoding an array of decoded values.
 */

import { decodedValues, type MultiGot, PinnedMultiGetResult } from '../boundary/results.js';
import { show } from '../core/bytes.js';
import type { Codec, EncodingOptions } from '../core/encoding.js';
import { SiltError } from '../core/errors.js';
import { checkOptionNames } from '../core/option-names.js';
import type { Core } from './core.js';
import { type GetOptions, MULTIGET_OPTIONS, type MultiGetOptions } from './options.js';

/** `keys` (of `codec`) read from `core` with `options`. */
export function multiGetOf(core: Core, codec: Codec, keys: unknown, options: (MultiGetOptions & GetOptions<unknown>) | undefined): MultiGot<unknown> {
  checkOptionNames(options, MULTIGET_OPTIONS, 'db.multiGet()');
  const snapshot = core.snapshotOf(options);
  const batched = options?.batched === undefined ? true : options.batched;
  if (typeof batched !== 'boolean') throw new SiltError('InvalidArgument', `batched must be a boolean, got ${show(batched)}`);
  const c = options?.valueEncoding === undefined ? codec : codec.with(options as EncodingOptions<unknown, unknown>);
  let given: unknown = keys;
  if (!c.plainKeys) {
    if (!Array.isArray(keys)) throw new SiltError('InvalidArgument', `keys must be an array of keys, got ${show(keys)}`);
    given = keys.map((k, i) => c.key(k, `keys[${i}]`));
  }
  const result = PinnedMultiGetResult.wrap(core.exchange, core.exchange.multiGet(given, snapshot, batched));
  if (c.plainValues) return result as unknown as MultiGot<unknown>;
  try {
    const out: unknown[] = new Array(result.length);
    for (let i = 0; i < result.length; i++) {
      const v = result.get(i);
      out[i] = v === undefined ? undefined : c.unvalue(v);
    }
    return (c.customValues ? decodedValues(out) : out) as unknown as MultiGot<unknown>;
  } finally {
    result.release();
  }
}
