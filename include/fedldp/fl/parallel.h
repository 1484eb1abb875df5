// How the training loops run their clients: f(0..n-1), in any order and on
// any threads; each f(i) writes only its own slot. The default runs them in
// order on the calling thread; sim/ passes a thread pool (sim/thread_pool.h).
#ifndef FEDLDP_FL_PARALLEL_H_
#define FEDLDP_FL_PARALLEL_H_

#include <cstddef>
#include <functional>

namespace fedldp {

using ParallelFor = std::function<void(std::size_t, const std::function<void(std::size_t)>&)>;
void RunSequentially(std::size_t n, const std::function<void(std::size_t)>& f);

}  // namespace fedldp

#endif  // FEDLDP_FL_PARALLEL_H_
