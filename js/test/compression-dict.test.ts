// Compression dictionaries (`compressionDictBytes`, the engine's
// compression_dict_bytes with every level): tables of similar records get a
// dictionary, take fewer bytes, and read back the same; the option is off by
// default and checked.
import { describe, expect, test } from 'vitest';
import type { Database, OpenOptions } from '../src/index.js';
import { fresh, rejected } from './helpers.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const cities = ['Lisbon', 'Osaka', 'Toronto', 'Nairobi', 'Lima', 'Oslo'];
const record = (i: number) =>
  JSON.stringify({
    id: `ord_${((i * 2654435761) >>> 0).toString(36)}`,
    status: ['pending', 'paid', 'shipped', 'delivered'][i % 4],
    customer: { name: `Person ${(i * 7) % 9973}`, email: `person${i % 1000}@example.com` },
    shipping: { city: cities[i % cities.length], carrier: 'UPS Standard' },
    items: [{ name: 'Ceramic mug, 350 ml', quantity: 1 + (i % 4) }],
  });
const key = (i: number) => `order:${String(i).padStart(8, '0')}`;
const N = 5000;
const DICT_READS = 'silt.compression.dict.block.read.count';

async function filled(options: OpenOptions): Promise<Database> {
  const db = await fresh({ writeBufferSize: 256 * 1024, ...options });
  for (let b = 0; b < N; b += 500) {
    const batch = db.batch();
    for (let i = b; i < b + 500; i++) batch.put(key(i), encoder.encode(record(i)));
    db.write(batch);
  }
  db.flush();
  await db.compactRange();
  await db.idle();
  return db;
}

describe('compressionDictBytes', () => {
  test('tables of similar records take fewer bytes with a dictionary, and every record reads back', async () => {
    const plain = await filled({});
    const dict = await filled({ compressionDictBytes: 8192 });
    for (const db of [plain, dict]) {
      for (let i = 0; i < N; i += 7) expect(decoder.decode(db.get(key(i)))).toBe(record(i));
      let n = 0;
      for await (const [k, v] of db.iterator()) {
        expect([decoder.decode(k as Uint8Array), decoder.decode(v as Uint8Array)]).toEqual([key(n), record(n)]);
        n++;
      }
      expect(n).toBe(N);
      expect((await db.verify()).entries).toBe(N);
    }
    expect(plain.statistics().tickers[DICT_READS] ?? 0).toBe(0);
    expect(dict.statistics().tickers[DICT_READS]).toBeGreaterThan(0);
    const bytes = (db: Database) => db.statistics().properties.tableBytes;
    expect(bytes(dict)).toBeLessThan(bytes(plain) * 0.85);
  });

  test('is checked: 0, or a whole number from 32 to 65536', async () => {
    for (const bad of [-1, 1.5, 16, 65537]) {
      expect(await rejected(fresh({ compressionDictBytes: bad }))).toMatchObject({ code: 'InvalidArgument' });
    }
    const db = await fresh({ compressionDictBytes: 0 });
    db.put('k', encoder.encode('v'));
    expect(decoder.decode(db.get('k'))).toBe('v');
  });
});
