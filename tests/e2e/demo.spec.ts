// The demo page in Chromium: its worker loads `siltdb`, writes records
// through the wasm build and reads them back.
import { expect, test, type ConsoleMessage } from '@playwright/test';

test('the demo worker writes records and reads the same values back', async ({ page }) => {
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`pageerror: ${err.message}`));
  page.on('console', (msg: ConsoleMessage) => {
    if (msg.type() === 'error' || msg.type() === 'warning') problems.push(`${msg.type()}: ${msg.text()}`);
  });

  await page.goto('/?n=3000&reads=500');
  await expect(page.locator('body')).toHaveAttribute('data-state', 'done');

  await expect(page.locator('#error')).toBeHidden();
  await expect(page.locator('#written')).toHaveText('3,000');
  await expect(page.locator('#reads-done')).toHaveText('500');
  await expect(page.locator('#verified')).toHaveText('500 of 500');
  await expect(page.locator('#deleted-get')).toHaveText('undefined');
  await expect(page.locator('#missing-get')).toHaveText('undefined');

  const rows = page.locator('#sample tbody tr');
  await expect(rows).toHaveCount(5);
  await expect(rows.nth(0).locator('td').nth(0)).toHaveText('user:00000000');
  await expect(rows.nth(2).locator('td').nth(1)).toHaveText(/^\{"id":2,"name":"user 2","score":\d+\}$/);

  // A second run from the form, with other sizes, goes through the same worker.
  await page.locator('#records').fill('250');
  await page.locator('#reads').fill('40');
  await page.locator('#run').click();
  await expect(page.locator('#written')).toHaveText('250');
  await expect(page.locator('#verified')).toHaveText('40 of 40');
  await expect(page.locator('body')).toHaveAttribute('data-state', 'done');

  expect(problems).toEqual([]);
});

test('the demo shows an error from the worker instead of results', async ({ page }) => {
  await page.goto('/?n=0');
  await expect(page.locator('body')).toHaveAttribute('data-state', 'error');
  await expect(page.locator('#error')).toHaveText(/^InvalidArgument: records must be/);
  await expect(page.locator('#written')).toHaveText('–');
});
