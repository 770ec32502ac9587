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
 */

import type { Response } from './wire.js';

/** Buffers smaller than this are cloned with their answer rather than transferred. */
export const TRANSFER_MIN = 1024;

/** A success (`[id, value]`, `from` on a shared channel) or a failure, as it travels. */
export type WireAnswer = [number, unknown] | [number, unknown, string] | Extract<Response, { ok: false }>;

/** `r` (an answer, or the answers of one message) as it travels; `from`: whether to name the leader (a shared channel). */
export function toWireAnswers(r: Response | Response[], from: boolean): WireAnswer | WireAnswer[] {
  if (Array.isArray(r)) return r.map((one) => toWireAnswer(one, from));
  return toWireAnswer(r, from);
}

function toWireAnswer(r: Response, from: boolean): WireAnswer {
  if (!r.ok) return r;
  return from ? [r.id, r.value, r.from] : [r.id, r.value];
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
    const [id, value, from] = m as [number, unknown, string?];
    each({ id, from: from ?? leader ?? '', ok: true, value });
    return;
  }
  if (Array.isArray(m)) {
    for (const one of m as WireAnswer[]) eachAnswer(one, leader, each);
    return;
  }
  each(m as Response);
}
