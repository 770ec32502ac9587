// A JSON data set as web apps store it (issue 36's storage bytes): records of
// an online shop's orders, generated from a seed, so every engine and every
// run stores the same bytes. Field names repeat in every record; values come
// from realistic sets (names, cities, products, statuses), numbers and
// timestamps vary, ids are unique. About 400 bytes of JSON each.

import { below, rng } from './common.js';

const FIRST = [
  'Ada',
  'Grace',
  'Linus',
  'Margaret',
  'Alan',
  'Barbara',
  'Dennis',
  'Frances',
  'Ken',
  'Radia',
  'Tim',
  'Hedy',
  'Edsger',
  'Katherine',
  'John',
  'Sophie',
  'Yuki',
  'Amara',
  'Mateo',
  'Priya',
];
const LAST = [
  'Lovelace',
  'Hopper',
  'Torvalds',
  'Hamilton',
  'Turing',
  'Liskov',
  'Ritchie',
  'Allen',
  'Thompson',
  'Perlman',
  'Berners-Lee',
  'Lamarr',
  'Dijkstra',
  'Johnson',
  'McCarthy',
  'Wilson',
  'Tanaka',
  'Okafor',
  'García',
  'Sharma',
];
const CITIES = [
  ['Lisbon', 'PT'],
  ['Osaka', 'JP'],
  ['Toronto', 'CA'],
  ['Nairobi', 'KE'],
  ['Lima', 'PE'],
  ['Oslo', 'NO'],
  ['Berlin', 'DE'],
  ['Austin', 'US'],
  ['Melbourne', 'AU'],
  ['Pune', 'IN'],
];
const PRODUCTS = [
  ['SKU-1001', 'Ceramic mug, 350 ml', 12.5],
  ['SKU-1002', 'Linen tea towel', 9.9],
  ['SKU-2040', 'Cast iron skillet, 26 cm', 44.0],
  ['SKU-2077', 'Chef knife, 20 cm', 79.0],
  ['SKU-3110', 'Bamboo cutting board', 24.0],
  ['SKU-3150', 'Glass storage jar, 1 l', 7.5],
  ['SKU-4200', 'French press, 8 cups', 34.9],
  ['SKU-4301', 'Pour-over kettle', 59.0],
  ['SKU-5005', 'Espresso cups, set of 4', 29.0],
  ['SKU-6012', 'Oven mitts, pair', 15.0],
];
const STATUSES = ['pending', 'paid', 'packed', 'shipped', 'delivered', 'returned'];
const CARRIERS = ['DHL Express', 'UPS Standard', 'FedEx Ground', 'La Poste Colissimo'];

/** The key of record `i`. */
export const recordKey = (i) => `order:${String(i).padStart(8, '0')}`;

/** Record `i` as an object (the same for the same `i`). */
export function record(i) {
  const next = rng(0x5eed0000 + i);
  const pick = (xs) => xs[below(next, xs.length)];
  const first = pick(FIRST);
  const last = pick(LAST);
  const [city, country] = pick(CITIES);
  const items = Array.from({ length: 1 + below(next, 3) }, () => {
    const [sku, name, price] = pick(PRODUCTS);
    return { sku, name, quantity: 1 + below(next, 4), unitPrice: price };
  });
  const created = Date.UTC(2026, 0, 1) + below(next, 300 * 86_400) * 1000;
  const status = pick(STATUSES);
  return {
    id: `ord_${((i * 2_654_435_761) >>> 0).toString(36).padStart(7, '0')}`,
    createdAt: new Date(created).toISOString(),
    status,
    customer: {
      id: `cus_${below(next, 50_000).toString(36).padStart(4, '0')}`,
      name: `${first} ${last}`,
      email: `${first}.${last}${below(next, 100)}@example.com`.toLowerCase(),
    },
    shipping: { city, country, carrier: pick(CARRIERS), tracking: status === 'pending' ? null : `TRK${below(next, 1e9)}` },
    items,
    total: Math.round(items.reduce((s, it) => s + it.quantity * it.unitPrice, 0) * 100) / 100,
    currency: 'EUR',
    giftWrap: below(next, 10) === 0,
  };
}

const encoder = new TextEncoder();

/** Record `i` as the UTF-8 bytes of its JSON. */
export const recordBytes = (i) => encoder.encode(JSON.stringify(record(i)));
