// LevelDB on one thread, for a WebAssembly build without threads.
//
// Emscripten builds without `-pthread` (SharedArrayBuffer, and so threads,
// need a cross-origin-isolated page, which the benchmark page is not) link
// stubs: `pthread_create` fails with EAGAIN, and mutexes and condition
// variables do nothing. LevelDB's PosixEnv runs flushes and compactions on a
// thread started by `Schedule`, and DBImpl waits on a condition variable for
// that thread. Two pieces replace the thread:
//
// - SingleThreadEnv forwards every call to a base Env (PosixEnv, whose files
//   are emscripten's in-memory MEMFS) except `Schedule` and `StartThread`.
//   `Schedule` queues the job: it cannot run inline, since DBImpl calls
//   `Schedule` with its mutex held and the job (DBImpl::BackgroundCall)
//   takes that mutex again. `RunPendingWork` runs the queue to empty,
//   including jobs that the jobs themselves schedule (a compaction that
//   leaves a level too big schedules the next one). `StartThread` runs the
//   function to completion on the caller's stack (DBImpl never calls it;
//   only LevelDB's tests and db_bench do).
//
// - port_single_thread.cc replaces LevelDB's port_posix.cc. Mutexes do
//   nothing (there is one thread). `CondVar::Wait` releases the mutex, in
//   effect, and runs the queued work: that is what the background thread
//   would do meanwhile, and the only way anything could change what the
//   caller waits for (MakeRoomForWrite waits for the previous memtable's
//   flush or for level 0 to shrink; ~DBImpl for a scheduled compaction to
//   finish). A wait with nothing queued could never end: it aborts, with a
//   message, instead of hanging.
//
// When the queued work runs otherwise is the C API's choice
// (silt_leveldb.cc): before every write, at ldb_settle and at ldb_close.

#ifndef SILT_BENCH_LEVELDB_SINGLE_THREAD_ENV_H_
#define SILT_BENCH_LEVELDB_SINGLE_THREAD_ENV_H_

#include <stddef.h>

#include <deque>

#include "leveldb/env.h"

namespace silt_bench {

class SingleThreadEnv : public leveldb::EnvWrapper {
 public:
  // The one instance, over leveldb::Env::Default(); never deleted (nor is
  // Env::Default()), so DBs may outlive any static destructor order.
  static SingleThreadEnv* Default();

  void Schedule(void (*function)(void*), void* arg) override;
  void StartThread(void (*function)(void*), void* arg) override;

  // Runs queued jobs, oldest first, until none is left; returns how many ran.
  // REQUIRES: no LevelDB mutex is held, except around CondVar::Wait (which
  // in effect releases it).
  size_t RunPendingWork();

 private:
  explicit SingleThreadEnv(leveldb::Env* base) : leveldb::EnvWrapper(base) {}

  struct Job {
    void (*function)(void*);
    void* arg;
  };
  std::deque<Job> queue_;
};

}  // namespace silt_bench

#endif  // SILT_BENCH_LEVELDB_SINGLE_THREAD_ENV_H_
