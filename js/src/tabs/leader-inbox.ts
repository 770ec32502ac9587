/**
 * A message that reaches the leader on a connection's line, read (issue
 * 40, item 2): its requests as envelopes, each checked against the fields
 * its operation or step declares (wire-checks.ts) before anything serves
 * it. A request that is malformed but names its id is answered with
 * `InvalidArgument`; one that does not, or anything else that is not a
 * request, is dropped and counted. A connection of another protocol
 * version (an older or newer siltdb in another tab) has every request
 * answered with `VersionMismatch`, read no further than its id. Answers
 * and control messages of other leaders, which a connection's
 * BroadcastChannel also carries, are passed over without a count.
 */

import { SiltError } from '../core/errors.js';
import { STEPS } from './leader-steps.js';
import { isOperation, OPERATIONS } from './operations.js';
import { type Envelope, PROTOCOL, versionMismatch, WRITES } from './protocol.js';
import { checkFields, COUNT, type Check, isObject, KEY, NAME, optional } from './wire-checks.js';

/**
 * A request refused before it is served: answered with `error`, in its
 * place among the message's requests. `write`: it named a write, whose
 * failure the connection's write record must keep (so that sent again it
 * fails again: write-records.ts).
 */
export interface Refusal {
  refused: number;
  error: SiltError;
  write: boolean;
}

/** The requests of one message in order (to serve, or refused), and how many things were dropped. */
export interface Inbox {
  items: (Envelope | Refusal)[];
  refusals: number;
  dropped: number;
}

const ENVELOPE: Readonly<Record<string, Check>> = { id: COUNT, request: () => undefined, floor: optional(COUNT), client: optional(NAME) };
const PACKED: Readonly<Record<string, Check>> = { gets: () => undefined, keys: () => undefined, snapshot: COUNT, floor: optional(COUNT) };

/** Reads message `m` of a connection speaking protocol `version`. */
export function readRequests(m: unknown, version: number): Inbox {
  const inbox: Inbox = { items: [], refusals: 0, dropped: 0 };
  // Answers of another leader on a shared channel: `[id, value]`, `[id, value, from]`.
  if (Array.isArray(m) && typeof m[0] === 'number') return inbox;
  const items: unknown[] = Array.isArray(m) ? m : [m];
  const refuse = (id: number, error: SiltError, op?: unknown) => {
    inbox.refusals++;
    inbox.items.push({ refused: id, error, write: typeof op === 'string' && (WRITES as ReadonlySet<string>).has(op) });
  };
  for (const item of items) {
    if (!isObject(item)) {
      inbox.dropped++;
      continue;
    }
    // Another leader's failure answer (it has an id too: refused, it would
    // answer the follower's request of that id from this leader), packed
    // answers, or a control message: not for a leader, and not counted.
    if ('ok' in item || 'ends' in item || typeof item.t === 'string') continue;
    if (!('id' in item || 'request' in item || 'gets' in item)) {
      inbox.dropped++;
      continue;
    }
    if (version !== PROTOCOL) {
      const ids = 'gets' in item && Array.isArray(item.gets) ? item.gets : [item.id];
      for (const id of ids) {
        if (COUNT(id) === undefined) refuse(id as number, versionMismatch(version, PROTOCOL));
        else inbox.dropped++;
      }
      continue;
    }
    if ('gets' in item) readPacked(item, inbox, refuse);
    else readEnvelope(item, inbox, refuse);
  }
  return inbox;
}

function malformed(what: string, problem: string): SiltError {
  return new SiltError(
    'InvalidArgument',
    `a request from another tab was malformed (${what}: ${problem}): that tab runs code that does not match this siltdb (reload it); nothing was done`,
  );
}

type Refuse = (id: number, e: SiltError, op?: unknown) => void;

function readEnvelope(item: Record<string, unknown>, inbox: Inbox, refuse: Refuse): void {
  if (COUNT(item.id) !== undefined) {
    inbox.dropped++;
    return;
  }
  const r = item.request;
  const problem = envelopeProblem(item, r);
  if (problem === undefined) inbox.items.push(item as unknown as Envelope);
  else refuse(item.id as number, problem, isObject(r) ? r.op : undefined);
}

/** What is wrong with envelope `item`, whose request is `r` (undefined: nothing). */
function envelopeProblem(item: Record<string, unknown>, r: unknown): SiltError | undefined {
  const bad = checkFields(item, ENVELOPE);
  if (bad !== undefined) return malformed('its envelope', bad);
  if (!isObject(r) || typeof r.op !== 'string') return malformed('its request', 'should be an object with a string op');
  const op = r.op;
  const known = isOperation(op) ? OPERATIONS[op] : Object.hasOwn(STEPS, op) ? STEPS[op as keyof typeof STEPS] : undefined;
  if (known === undefined) return malformed(`op ${JSON.stringify(op.slice(0, 40))}`, 'no such operation');
  const problem = checkFields(r, known.fields as Readonly<Record<string, Check>>, 'op');
  return problem === undefined ? undefined : malformed(op, problem);
}

/** Gets packed by request-wire.ts: each key checked; a bad one fails its own get. */
function readPacked(item: Record<string, unknown>, inbox: Inbox, refuse: Refuse): void {
  const { gets, keys } = item;
  if (!Array.isArray(gets)) {
    inbox.dropped++;
    return;
  }
  const bad = !Array.isArray(keys) || keys.length !== gets.length ? 'gets and keys should be arrays of one length' : checkFields(item, PACKED);
  for (let i = 0; i < gets.length; i++) {
    const id = gets[i];
    if (COUNT(id) !== undefined) {
      inbox.dropped++;
      continue;
    }
    const problem = bad ?? (KEY((keys as unknown[])[i]) === undefined ? undefined : `key ${i} should be a string or a Uint8Array`);
    if (problem !== undefined) refuse(id as number, malformed('packed gets', problem));
    else {
      const request = { op: 'get', key: (keys as unknown[])[i], snapshot: item.snapshot } as Envelope['request'];
      inbox.items.push(item.floor === undefined ? { id: id as number, request } : { id: id as number, request, floor: item.floor as number });
    }
  }
}
