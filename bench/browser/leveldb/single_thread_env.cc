// See single_thread_env.h.

#include "single_thread_env.h"

namespace silt_bench {

SingleThreadEnv* SingleThreadEnv::Default() {
  static SingleThreadEnv* env = new SingleThreadEnv(leveldb::Env::Default());
  return env;
}

void SingleThreadEnv::Schedule(void (*function)(void*), void* arg) { queue_.push_back(Job{function, arg}); }

void SingleThreadEnv::StartThread(void (*function)(void*), void* arg) { function(arg); }

size_t SingleThreadEnv::RunPendingWork() {
  size_t ran = 0;
  // Pop before running: the job may schedule another one (push_back), which
  // this loop then runs too.
  while (!queue_.empty()) {
    Job job = queue_.front();
    queue_.pop_front();
    job.function(job.arg);
    ran++;
  }
  return ran;
}

}  // namespace silt_bench
