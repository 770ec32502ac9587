// The app's own worker: the README's example, on OPFS. Asked to, it first
// hides something siltdb needs, as a browser without it would (without
// sync access handles, open() keeps the database in IndexedDB, unless
// `require` is 'opfs').
import { open } from 'siltdb';

const hiders = {
  // An engine without fixed-width SIMD refuses to compile siltdb's module
  // and says no to a module that uses v128 (this stand-in: to any module
  // with a 0xfd opcode prefix byte in it).
  simd() {
    const refuse = async () => {
      throw new WebAssembly.CompileError('WebAssembly.instantiate(): Compiling function #1 failed: Wasm SIMD unsupported');
    };
    WebAssembly.instantiate = refuse;
    WebAssembly.instantiateStreaming = refuse;
    WebAssembly.compile = refuse;
    WebAssembly.compileStreaming = refuse;
    WebAssembly.validate = (bytes) => !new Uint8Array(bytes.buffer ?? bytes).includes(0xfd);
  },
  // A browser whose OPFS has no synchronous access handles at all.
  'sync-access-handles'() {
    delete FileSystemFileHandle.prototype.createSyncAccessHandle;
  },
  // One that has the method but whose storage backend refuses it, as
  // WebKitGTK 2.50 does.
  'sync-access-backend'() {
    FileSystemFileHandle.prototype.createSyncAccessHandle = async () => {
      throw new DOMException('Backend does not support this operation', 'NotSupportedError');
    };
  },
};

self.onmessage = async ({ data: { hide, require } }) => {
  try {
    if (hide !== null) hiders[hide]();
    // The previous visit's worker may hold the lock for a moment after a reload.
    const options = { wait: true, signal: AbortSignal.timeout(5_000), ...(require === null ? {} : { storage: require }) };
    const db = await open(hide === null ? 'app' : `app-${hide}`, options);
    const before = db.get('visits');
    const visits = before === undefined ? 1 : Number(new TextDecoder().decode(before)) + 1;
    db.put('visits', new TextEncoder().encode(String(visits)), { sync: true });
    const stats = db.statistics();
    db.close();
    postMessage({ visits, persistent: stats.persistent, memory: stats.memory.mode, storage: db.storage });
  } catch (e) {
    postMessage({ error: { code: e.code, message: e.message } });
  }
};
