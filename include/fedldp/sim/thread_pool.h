// A fixed pool of worker threads for data-parallel loops. ParallelFor(n, f)
// calls f(i) once for every i in [0, n) and returns when all are done; the
// caller's thread works too. Results are deterministic as long as f(i) only
// writes slot i: which thread runs which i never matters.
#ifndef FEDLDP_SIM_THREAD_POOL_H_
#define FEDLDP_SIM_THREAD_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "fedldp/fl/parallel.h"

namespace fedldp {

class ThreadPool {
 public:
  // threads: total including the caller; 0 = std::thread::hardware_concurrency().
  explicit ThreadPool(std::size_t threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  std::size_t size() const { return workers_.size() + 1; }
  void ParallelFor(std::size_t n, const std::function<void(std::size_t)>& f);
  // The pool as the training loops take it (fl/parallel.h); valid while the
  // pool lives.
  ::fedldp::ParallelFor AsParallelFor();

 private:
  void Work();
  void Drain();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(std::size_t)>* job_ = nullptr;
  std::size_t n_ = 0;
  std::atomic<std::size_t> next_{0};
  std::size_t busy_ = 0;
  std::uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace fedldp

#endif  // FEDLDP_SIM_THREAD_POOL_H_
