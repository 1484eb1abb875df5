// A cluster of threads standing in for MPI ranks (fl/cluster.h): RunRanks
// runs f(cluster) on `size` threads at once, each with its own rank, and
// their collectives meet at a barrier. What a run on it gives is what mpirun
// would give, without MPI.
#ifndef FEDLDP_TESTS_TESTING_THREAD_CLUSTER_H_
#define FEDLDP_TESTS_TESTING_THREAD_CLUSTER_H_

#include <barrier>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "fedldp/fl/cluster.h"

namespace fedldp::testing {

class ThreadRanks {
 public:
  explicit ThreadRanks(int size) : barrier_(size), slots_(static_cast<std::size_t>(size)) {}

  class Rank final : public Cluster {
   public:
    Rank(ThreadRanks& all, int rank) : all_(all), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return static_cast<int>(all_.slots_.size()); }
    std::vector<std::string> AllGather(std::string_view mine) override {
      all_.slots_[static_cast<std::size_t>(rank_)] = std::string(mine);
      all_.barrier_.arrive_and_wait();
      std::vector<std::string> out = all_.slots_;
      ++all_.gathers_;
      all_.barrier_.arrive_and_wait();  // every rank has read before the next write
      return out;
    }
    bool Any(bool mine) override {
      bool any = false;
      for (const std::string& s : AllGather(mine ? "1" : "0")) any = any || s == "1";
      return any;
    }

   private:
    ThreadRanks& all_;
    int rank_;
  };

  // f(rank's cluster) on every rank at once; returns when all have.
  void Run(const std::function<void(Cluster&)>& f) {
    std::vector<std::thread> threads;
    for (int r = 0; r < static_cast<int>(slots_.size()); ++r) {
      threads.emplace_back([this, r, &f] {
        Rank rank(*this, r);
        f(rank);
      });
    }
    for (auto& t : threads) t.join();
  }
  // AllGather calls, summed over ranks.
  int gathers() const { return gathers_.load(); }

 private:
  std::barrier<> barrier_;
  std::vector<std::string> slots_;
  std::atomic<int> gathers_{0};
};

}  // namespace fedldp::testing

#endif  // FEDLDP_TESTS_TESTING_THREAD_CLUSTER_H_
