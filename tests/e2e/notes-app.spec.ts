// Silt Notes (demo/notes: React, siltdb/react, connect(); issue 39 item 4)
// as a user drives it, in two tabs: a note added in one shows in the other,
// an edit in either shows in both, the live search follows the titles, the
// leading tab closes and the other goes on, and the notes are there after
// a reload.
import { expect, type Page, test } from '@playwright/test';

async function openNotes(page: Page): Promise<void> {
  await page.goto('/notes/');
  await expect(page.locator('body')).toHaveAttribute('data-state', 'ready', { timeout: 30_000 });
}

async function add(page: Page, title: string): Promise<void> {
  await page.fill('#new-title', title);
  await page.click('#new-note button');
}

const recent = (page: Page) => page.locator('#recent li');

test('two tabs of Silt Notes stay in sync: add, edit, search, delete; the leader closes; a reload keeps the notes', async ({ context }) => {
  test.setTimeout(90_000);
  const a = await context.newPage();
  await openNotes(a);
  const b = await context.newPage();
  await openNotes(b);
  await expect(a.locator('#role')).toHaveText('This tab leads.');
  await expect(b.locator('#role')).toHaveText('Another tab leads.');
  await add(a, 'Groceries');
  await add(a, 'Garden plans');
  await add(b, 'Books to read');
  // Newest first, in both tabs.
  for (const p of [a, b]) await expect(recent(p)).toHaveText(['Books to read', 'Garden plans', 'Groceries']);
  // An edit in B (the note opened there) shows in A's list and editor.
  await b.click('#recent li:has-text("Groceries") button');
  await b.fill('#body', 'milk, eggs');
  await a.click('#recent li:has-text("Groceries") button');
  await expect(a.locator('#body')).toHaveValue('milk, eggs');
  await b.fill('#title', 'Groceries for Sunday');
  await expect(recent(a)).toHaveText(['Books to read', 'Garden plans', 'Groceries for Sunday']);
  await expect(a.locator('#title')).toHaveValue('Groceries for Sunday');
  // The live search: titles from a prefix, following the writes of the other tab.
  await a.fill('#search', 'g');
  await expect(a.locator('#found li')).toHaveText(['Garden plans', 'Groceries for Sunday']);
  await add(b, 'Gifts');
  await expect(a.locator('#found li')).toHaveText(['Garden plans', 'Gifts', 'Groceries for Sunday']);
  await a.fill('#search', 'gr');
  await expect(a.locator('#found li')).toHaveText(['Groceries for Sunday']);
  // Deleted in A: gone from B's list, and B's editor says so.
  await b.click('#recent li:has-text("Garden plans") button');
  await a.click('#recent li:has-text("Garden plans") button');
  await a.click('#delete');
  await expect(recent(b)).toHaveText(['Gifts', 'Books to read', 'Groceries for Sunday']);
  await expect(b.locator('#gone')).toBeVisible();
  // A title typed key by key (each keystroke saved) leaves one index entry, its last.
  await b.click('#recent li:has-text("Books to read") button');
  await b.fill('#title', '');
  await b.locator('#title').pressSequentially('Stories', { delay: 5 });
  await a.fill('#search', 's');
  await expect(a.locator('#found li')).toHaveText(['Stories']);
  await a.fill('#search', '');
  await expect(a.locator('#error')).toHaveText('');
  // The leading tab closes: B leads and goes on.
  await a.close();
  await add(b, 'After the leader went');
  await expect(recent(b)).toHaveText(['After the leader went', 'Gifts', 'Stories', 'Groceries for Sunday']);
  // A reload: the notes are on disk.
  await b.reload();
  await expect(b.locator('body')).toHaveAttribute('data-state', 'ready', { timeout: 30_000 });
  await expect(recent(b)).toHaveText(['After the leader went', 'Gifts', 'Stories', 'Groceries for Sunday']);
  await expect(b.locator('#role')).toHaveText('This tab leads.');
  await expect(b.locator('#error')).toHaveText('');
});
