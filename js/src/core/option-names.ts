/**
 * Options objects refuse keys they do not know (issue 41): a misspelled
 * option (`createIfMising`) or one of another library (`cacheSize`) fails
 * the call with `InvalidArgument` naming the key and the closest known
 * one, instead of being silently ignored. Each options type declares its
 * names once, beside the type (`optionNames`), in a form the compiler
 * holds to the type: a name missing or extra does not compile.
 */

import { SiltError } from './errors.js';

/**
 * `O` (the options a generic call was given) with no key that `T` lacks:
 * a misspelled key fails to compile where an object literal is inferred
 * as a type parameter (where TypeScript's own check of excess properties
 * does not reach). Each key `T` lacks must be `never`.
 */
export type Exactly<O, T> = O & { [K in Exclude<keyof O, keyof T>]: never };

/** Every name of the options type `T`, as a record (`{ sync: true }`): the compiler refuses a name missing or extra. */
export type NameRecord<T> = { readonly [N in keyof Required<T>]: true };

/**
 * The option names of one options type (`record`, as declared), and what
 * to say of names other libraries use for what siltdb calls otherwise
 * (where the closest name by spelling would mislead).
 */
export interface OptionNames<T = unknown> extends OptionList {
  readonly record: NameRecord<T>;
}

/** The names a check needs (`OptionNames` without its type). */
export interface OptionList {
  readonly names: readonly string[];
  readonly elsewhere: Readonly<Record<string, string>>;
}

/**
 * The option names of the options type `T`, every one of them
 * (`optionNames<WriteOptions>({ sync: true })`; a type that extends
 * another's spreads its `record`), with `elsewhere`: names other libraries
 * use, each with what to use instead.
 */
export function optionNames<T>(record: NameRecord<T>, elsewhere: Record<string, string> = {}): OptionNames<T> {
  return Object.freeze({ names: Object.freeze(Object.keys(record)), elsewhere: Object.freeze({ ...elsewhere }), record });
}

/**
 * Checks that every key of `options` (undefined: none given) is one of
 * `known`, the options of `call` (as the user wrote it: `'open()'`,
 * `'db.get()'`); throws `InvalidArgument` naming the first unknown key and
 * what to write instead. A key whose value is `undefined` counts too: it is
 * as misspelled as one with a value.
 */
export function checkOptionNames(options: unknown, known: OptionList, call: string): void {
  if (options === undefined) return;
  if (options === null || typeof options !== 'object') {
    throw new SiltError('InvalidArgument', `${call}'s options must be an object, got ${options === null ? 'null' : typeof options}`);
  }
  for (const key in options) {
    if (!known.names.includes(key)) throw unknownOption(key, known, call);
  }
}

function unknownOption(key: string, { names, elsewhere: hints }: OptionList, call: string): SiltError {
  const printable = JSON.stringify(key);
  const elsewhere = Object.hasOwn(hints, key) ? hints[key] : undefined;
  const near = closest(key, names);
  const hint =
    elsewhere !== undefined
      ? `: ${elsewhere}`
      : near !== undefined
        ? ` (did you mean ${near}?)`
        : names.length === 0
          ? `: ${call} takes no options`
          : `; its options are ${names.join(', ')}`;
  return new SiltError('InvalidArgument', `${call} has no option ${printable}${hint}`);
}

/** The known name closest to `key`: equal but for case, the start of it (or it of `key`), or within a few edits (a third of its length, at least 1, at most 3). */
export function closest(key: string, known: readonly string[]): string | undefined {
  const lower = key.toLowerCase();
  let best: string | undefined;
  let bestDistance = Math.min(3, Math.max(1, Math.floor(key.length / 3))) + 1;
  for (const name of known) {
    if (name.toLowerCase() === lower) return name;
    const other = name.toLowerCase();
    // One the start of the other ('sort', 'sorted'; not 'key', 'keyEncoding'): as near as one edit.
    const shorter = Math.min(lower.length, other.length);
    const prefix = shorter >= 4 && shorter * 2 >= Math.max(lower.length, other.length) && (other.startsWith(lower) || lower.startsWith(other));
    const d = prefix ? 1 : distance(lower, other, bestDistance);
    if (d < bestDistance) {
      best = name;
      bestDistance = d;
    }
  }
  return best;
}

/** The edit distance of `a` and `b` (insert, delete, replace, swap two neighbours), or `cap` if it is `cap` or more. */
function distance(a: string, b: string, cap: number): number {
  if (Math.abs(a.length - b.length) >= cap) return cap;
  let before = new Array<number>(b.length + 1).fill(0);
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = new Array<number>(b.length + 1);
    row[0] = i;
    let least = row[0];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, before[j - 2]! + 1);
      row[j] = d;
      least = Math.min(least, d);
    }
    if (least >= cap) return cap;
    before = previous;
    previous = row;
  }
  return Math.min(previous[b.length]!, cap);
}
