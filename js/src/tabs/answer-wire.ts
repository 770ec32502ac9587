/**
 * Answers as they travel from the leader to a connection (issue 34, item 1:
 * one message each way, and as little of it as the floor's). A request's
 * success goes as `[id, value]`, with `from` (the leader's id) appended only
 * on a connection's BroadcastChannel, where every leader may post (a port
 * or the page's own worker is one leader's); a failure as its `Response`
 * object; the answers of requests sent together (outbox.ts) as an array of
 * those. Measured in Chromium from a page's main thread, medians of
 * interleaved runs: `{ id, from, ok, value }` with its value transferred
 * cost 12 µs a round trip more than the bare value, `[id, value]` 3 µs.
 * Buffers under `TRANSFER_MIN` bytes are cloned, not transferred: a
 * transfer cost 8 µs more for 100 bytes, and saved 15 µs at 4 KiB.
 *
 * Consecutive successes of one message whose values are small byte arrays
 * (the gets of a `Promise.all`, read with one batched MultiGet) travel
 * packed (`PackedAnswers`): their bytes in one buffer, each value's end in
 * one array, so that a message of 32 gets clones two buffers, not 32.
 */

import type { Response } from './wire.js';

/** Buffers smaller than this are cloned with their answer rather than transferred. */
export const TRANSFER_MIN = 1024;

/**
 * Successes `ids` whose values are byte arrays, packed: value `i` is
 * `bytes[ends[i - 1] .. ends[i]]` (from 0 for the first); `from` as for one.
 */
export type PackedAnswers = { ids: number[]; bytes: Uint8Array; ends: Uint32Array; from?: string };

/** A success (`[id, value]`, `from` on a shared channel), a failure, or successes packed, as they travel. */
export type WireAnswer = [number, unknown] | [number, unknown, string] | Extract<Response, { ok: false }> | PackedAnswers;

/** At least this many consecutive small byte-array values of one message travel packed. */
const PACK_MIN = 2;

/**
 * `r` and its transfer list as they travel (`toWireAnswers`,
 * `worthTransferring`), with runs of small byte-array values packed: what
 * a leader posts.
 */
export function toWireMessage(r: Response | Response[], from: boolean, transfer: Transferable[]): [WireAnswer | WireAnswer[], Transferable[]] {
  if (!Array.isArray(r)) return [toWireAnswer(r, from), worthTransferring(transfer)];
  const out: WireAnswer[] = [];
  const packed: Transferable[] = [];
  for (let i = 0; i < r.length; ) {
    let j = i;
    while (j < r.length && packable(r[j]!)) j++;
    if (j - i >= PACK_MIN) {
      const p = pack(r.slice(i, j), from);
      out.push(p);
      if (p.bytes.byteLength >= TRANSFER_MIN) packed.push(p.bytes.buffer);
      i = j;
    } else {
      out.push(toWireAnswer(r[i]!, from));
      i++;
    }
  }
  const t = worthTransferring(transfer);
  return [out, packed.length === 0 ? t : t.concat(packed)];
}

function packable(r: Response): boolean {
  return r.ok && r.value instanceof Uint8Array && r.value.byteLength < TRANSFER_MIN;
}

function pack(run: Response[], from: boolean): PackedAnswers {
  let total = 0;
  for (const r of run) total += (r as { value: Uint8Array }).value.byteLength;
  const bytes = new Uint8Array(total);
  const ends = new Uint32Array(run.length);
  const ids: number[] = [];
  let at = 0;
  for (let i = 0; i < run.length; i++) {
    const v = (run[i] as { value: Uint8Array }).value;
    bytes.set(v, at);
    at += v.byteLength;
    ends[i] = at;
    ids.push(run[i]!.id);
  }
  const p: PackedAnswers = { ids, bytes, ends };
  if (from) p.from = run[0]!.from;
  return p;
}

/** `r` (an answer, or the answers of one message) as it travels; `from`: whether to name the leader (a shared channel). */
export function toWireAnswers(r: Response | Response[], from: boolean): WireAnswer | WireAnswer[] {
  if (Array.isArray(r)) return r.map((one) => toWireAnswer(one, from));
  return toWireAnswer(r, from);
}

function toWireAnswer(r: Response, from: boolean): WireAnswer {
  if (!r.ok) return r;
  // A small view of part of a buffer (a batch's values: leader-gets.ts)
  // travels as a copy of its own: cloned (too small to transfer), the view
  // would take the whole buffer along.
  const v = r.value;
  const value = v instanceof Uint8Array && v.byteLength < TRANSFER_MIN && v.byteLength !== v.buffer.byteLength ? v.slice() : v;
  return from ? [r.id, value, r.from] : [r.id, value];
}

/** The buffers of `transfer` worth transferring (the others are cloned with their answer). */
export function worthTransferring(transfer: Transferable[]): Transferable[] {
  if (transfer.length === 0) return transfer;
  return transfer.filter((t) => !(t instanceof ArrayBuffer) || t.byteLength >= TRANSFER_MIN);
}

/**
 * Whether message `m` is answers (one, or an array of them), as opposed to a
 * control message (`{ t }`).
 */
export function isAnswers(m: unknown): m is WireAnswer | WireAnswer[] {
  return Array.isArray(m) || (typeof m === 'object' && m !== null && !('t' in m));
}

/**
 * Calls `each` with every answer of message `m` as a `Response`; `leader`:
 * the leader the link it came on belongs to (undefined for a shared
 * channel, where an answer names its leader).
 */
export function eachAnswer(m: WireAnswer | WireAnswer[], leader: string | undefined, each: (r: Response) => void): void {
  if (Array.isArray(m) && typeof m[0] === 'number') {
    const [id, value, from] = m as [number, unknown, unknown];
    if (from !== undefined && typeof from !== 'string') return;
    each({ id, from: from ?? leader ?? '', ok: true, value });
    return;
  }
  if (Array.isArray(m)) {
    for (const one of m as unknown[]) if (typeof one === 'object' && one !== null) eachAnswer(one as WireAnswer, leader, each);
    return;
  }
  if ('ends' in m) {
    // Each value a copy of its own (the caller owns it; no view of the others' bytes).
    const { ids, bytes, ends } = m;
    if (!Array.isArray(ids) || !(bytes instanceof Uint8Array) || !(ends instanceof Uint32Array) || ends.length !== ids.length) return;
    const from = m.from ?? leader ?? '';
    for (let i = 0, start = 0; i < ids.length; start = ends[i]!, i++) {
      if (ends[i]! < start || ends[i]! > bytes.length) return; // not packed by a leader of this protocol
      each({ id: ids[i]!, from, ok: true, value: bytes.slice(start, ends[i]!) });
    }
    return;
  }
  const r = m as Partial<Extract<Response, { ok: false }>>;
  // A failure: anything else is not an answer of this protocol.
  if (typeof r.id !== 'number' || r.ok !== false || typeof r.error?.code !== 'string' || typeof r.error.message !== 'string') return;
  each(m as Response);
}
