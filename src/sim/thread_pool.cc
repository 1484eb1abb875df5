#include "fedldp/sim/thread_pool.h"

#include <algorithm>

namespace fedldp {

ThreadPool::ThreadPool(std::size_t threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  for (std::size_t t = 1; t < threads; ++t) workers_.emplace_back([this] { Work(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::Drain() {
  for (std::size_t i = next_.fetch_add(1); i < n_; i = next_.fetch_add(1)) (*job_)(i);
}

void ThreadPool::Work() {
  std::uint64_t seen = 0;
  while (true) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    Drain();
    std::lock_guard lock(mutex_);
    if (--busy_ == 0) done_.notify_all();
  }
}

::fedldp::ParallelFor ThreadPool::AsParallelFor() {
  return [this](std::size_t n, const std::function<void(std::size_t)>& f) { ParallelFor(n, f); };
}

void ThreadPool::ParallelFor(std::size_t n, const std::function<void(std::size_t)>& f) {
  if (workers_.empty() || n < 2) {
    for (std::size_t i = 0; i < n; ++i) f(i);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    job_ = &f;
    n_ = n;
    next_ = 0;
    // Every worker takes part in every generation, so the job (and n_) stay
    // valid until the last of them has left Drain().
    busy_ = workers_.size();
    ++generation_;
  }
  wake_.notify_all();
  Drain();
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return busy_ == 0; });
  job_ = nullptr;
}

}  // namespace fedldp
