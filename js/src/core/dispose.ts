/**
 * The keys of siltdb's dispose methods (explicit resource management:
 * `using` and `await using`), without defining anything global.
 *
 * Where the runtime has `Symbol.dispose` / `Symbol.asyncDispose`, they.
 * Where it has not (older Safari and Firefox), the registered symbols
 * `Symbol.for('Symbol.dispose')` / `Symbol.for('Symbol.asyncDispose')`:
 * the ones the polyfills an app brings for its own `using` define (core-js,
 * and the helpers of TypeScript and Babel look them up the same way), so
 * `using` in the app's code finds siltdb's methods. siltdb's own code does
 * not use `using` (its compiled form needs the global symbols), and never
 * defines them: the package has no side effects (`"sideEffects": false`).
 */
const S = Symbol as unknown as { dispose?: symbol; asyncDispose?: symbol };

/** `Symbol.dispose`, or the registered symbol polyfills use. */
export const dispose: typeof Symbol.dispose = (S.dispose ?? Symbol.for('Symbol.dispose')) as typeof Symbol.dispose;

/** `Symbol.asyncDispose`, or the registered symbol polyfills use. */
export const asyncDispose: typeof Symbol.asyncDispose = (S.asyncDispose ?? Symbol.for('Symbol.asyncDispose')) as typeof Symbol.asyncDispose;
