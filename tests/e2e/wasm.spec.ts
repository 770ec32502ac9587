// The wasm build itself, loaded the browser way (fetch + instantiateStreaming
// of the .wasm next to the glue) on the page's main thread.
import { expect, test } from '@playwright/test';

test('the .wasm is served as application/wasm and was built with SIMD128', async ({ page }) => {
  const wasm = await page.request.get('/siltdb/dist/silt_wasm_bg.wasm');
  expect(wasm.headers()['content-type']).toBe('application/wasm'); // or instantiateStreaming refuses it
  await page.goto('/');
  const simd = await page.evaluate(async () => {
    const silt = await import('/siltdb/dist/index.js' as string);
    return silt.simd128Enabled();
  });
  expect(simd).toBe(true);
});

test('siltdb in the browser: round trip, typed errors, Closed after close', async ({ page }) => {
  await page.goto('/');
  const outcome = await page.evaluate(async () => {
    const silt = await import('/siltdb/dist/index.js' as string);
    const enc = new TextEncoder();
    const dec = new TextDecoder();
    const db = await silt.openMemory();
    const codeOf = (f: () => unknown) => {
      try {
        f();
        return 'no error';
      } catch (e) {
        return e instanceof silt.SiltError ? (e as { code: string }).code : `not a SiltError: ${String(e)}`;
      }
    };
    try {
      db.put('k', enc.encode('v1'));
      db.put(enc.encode('k2'), enc.encode('v2'));
      const got = dec.decode(db.get(enc.encode('k')));
      const got2 = db.getPinned('k2').text();
      db.delete('k');
      const afterDelete = db.get('k') === undefined;
      const badKey = codeOf(() => db.put(12, enc.encode('v')));
      const badValue = codeOf(() => db.put('k', 'v'));
      db.close();
      const afterClose = codeOf(() => db.get('k2'));
      return { got, got2, afterDelete, badKey, badValue, afterClose };
    } finally {
      db.close();
    }
  });
  expect(outcome).toEqual({
    got: 'v1',
    got2: 'v2',
    afterDelete: true,
    badKey: 'InvalidArgument',
    badValue: 'InvalidArgument',
    afterClose: 'Closed',
  });
});
