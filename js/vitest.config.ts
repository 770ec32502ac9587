import { defineConfig } from 'vitest/config';

// The package against the real wasm build (js/pkg), in Node. scripts/build.sh
// must have run first.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    environment: 'node',
    testTimeout: 20_000,
    hookTimeout: 20_000,
    teardownTimeout: 10_000,
    // One worker: the machine has two cores and the tests are small.
    pool: 'forks',
    // The FinalizationRegistry test triggers garbage collection itself.
    execArgv: ['--expose-gc'],
    maxWorkers: 1,
    passWithNoTests: false,
    allowOnly: false,
  },
});
