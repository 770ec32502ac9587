// LevelDB's port primitives (declared in port/port_posix.h) for one thread;
// replaces port/port_posix.cc. See single_thread_env.h.

#include <stdio.h>
#include <stdlib.h>

#include "port/port.h"
#include "single_thread_env.h"

namespace leveldb {
namespace port {

// One thread: nothing to exclude. (The pthread_mutex_t member that
// port_posix.h declares stays unused.)
Mutex::Mutex() {}
Mutex::~Mutex() {}
void Mutex::Lock() {}
void Mutex::Unlock() {}

CondVar::CondVar(Mutex* mu) : mu_(mu) {}
CondVar::~CondVar() {}

void CondVar::Wait() {
  // Whatever the caller waits for can only come from queued background work;
  // run it as the background thread would while the caller waits.
  if (silt_bench::SingleThreadEnv::Default()->RunPendingWork() == 0) {
    fprintf(stderr,
            "LevelDB waits on a condition variable with no background work queued: in this single-threaded "
            "build nothing could ever signal it (see bench/browser/leveldb/single_thread_env.h)\n");
    abort();
  }
}

// The waiter re-checks its condition after Wait returns; nothing to wake.
void CondVar::Signal() {}
void CondVar::SignalAll() {}

void InitOnce(OnceType* once, void (*initializer)()) {
  if (*once == LEVELDB_ONCE_INIT) {
    *once = LEVELDB_ONCE_INIT + 1;
    initializer();
  }
}

}  // namespace port
}  // namespace leveldb
