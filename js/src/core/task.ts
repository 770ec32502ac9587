/**
 * Yielding to the event loop without the clamp of `setTimeout(0)`: once
 * timers nest five deep (a timer set from a timer's callback, as a loop of
 * `await new Promise((r) => setTimeout(r, 0))` does), browsers delay each
 * one by at least 4 ms (HTML's timer nesting rule), so a loop that yields
 * after every slice of work spends most of its time waiting.
 *
 * `nextTask()` resolves in a new task: from a message on a private
 * `MessageChannel` in browsers and workers (not clamped, and messages,
 * timers and other tasks queued meanwhile still run first or in between),
 * from `setImmediate` where there is one (Node: a MessagePort with a
 * handler would keep the process alive), else from `setTimeout(0)`.
 */

type Resolve = () => void;

const queue: Resolve[] = [];
let post: (() => void) | undefined;

function poster(): () => void {
  if (post !== undefined) return post;
  const g = globalThis as { setImmediate?: (f: () => void) => unknown };
  if (typeof g.setImmediate === 'function') {
    const immediate = g.setImmediate;
    post = () => void immediate(() => queue.shift()?.());
  } else if (typeof MessageChannel === 'function') {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => queue.shift()?.();
    post = () => channel.port2.postMessage(null);
  } else {
    post = () => void setTimeout(() => queue.shift()?.(), 0);
  }
  return post;
}

/** Resolves in a new task of the event loop (see the module doc). */
export function nextTask(): Promise<void> {
  return new Promise<void>((resolve) => {
    queue.push(resolve);
    poster()();
  });
}
