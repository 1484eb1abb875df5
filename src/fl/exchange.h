// Internal to the fl module: the bytes the training loops exchange between
// the processes of a Cluster (fl/cluster.h). Both ends are this same
// program, so a short read is a bug, not bad input: it throws.
#ifndef FEDLDP_SRC_FL_EXCHANGE_H_
#define FEDLDP_SRC_FL_EXCHANGE_H_

#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "fedldp/fl/cluster.h"

namespace fedldp::fl_internal {

template <typename T>
void Put(std::string& out, const T& value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}
template <typename T>
void PutAll(std::string& out, const T* values, std::size_t count) {
  if (count == 0) return;  // an empty vector's data() may be null
  out.append(reinterpret_cast<const char*>(values), count * sizeof(T));
}
// A vector: its size, then its values.
template <typename T>
void PutVector(std::string& out, const std::vector<T>& values) {
  Put(out, static_cast<std::uint64_t>(values.size()));
  PutAll(out, values.data(), values.size());
}

// Reads what Put wrote, in order.
struct Reader {
  std::string_view bytes;
  template <typename T>
  T Get() {
    T value;
    GetAll(&value, 1);
    return value;
  }
  template <typename T>
  void GetAll(T* values, std::size_t count) {
    if (count == 0) return;  // an empty vector's data() may be null
    if (bytes.size() < count * sizeof(T)) throw std::logic_error("a cut-short exchange");
    std::memcpy(values, bytes.data(), count * sizeof(T));
    bytes.remove_prefix(count * sizeof(T));
  }
  template <typename T>
  void GetVector(std::vector<T>& values) {
    values.resize(Get<std::uint64_t>());
    GetAll(values.data(), values.size());
  }
};

// The rank that computes each slot when slot k holds clients[k], one of n:
// the owner of its client.
inline std::vector<int> ClientOwners(const Cluster& cluster, std::span<const std::size_t> clients,
                                     std::size_t n) {
  std::vector<int> owners;
  for (const std::size_t c : clients) owners.push_back(Cluster::Owner(c, n, cluster.size()));
  return owners;
}

// The exchange after each process computed the slots it owns (slot k is
// owners[k]'s): write(out, k) writes slot k's result for the other
// processes, read(in, k) reads it back into slot k on each of them.
template <typename Write, typename Read>
void ExchangeSlots(Cluster& cluster, std::span<const int> owners, Write write, Read read) {
  std::string mine;
  for (std::size_t k = 0; k < owners.size(); ++k) {
    if (owners[k] != cluster.rank()) continue;
    Put(mine, static_cast<std::uint64_t>(k));
    write(mine, k);
  }
  const std::vector<std::string> all = cluster.AllGather(mine);
  for (int rank = 0; rank < cluster.size(); ++rank) {
    if (rank == cluster.rank()) continue;
    Reader in{all[static_cast<std::size_t>(rank)]};
    while (!in.bytes.empty()) {
      const auto k = in.Get<std::uint64_t>();
      if (k >= owners.size()) throw std::logic_error("an exchange names no slot of the round");
      read(in, static_cast<std::size_t>(k));
    }
  }
}

}  // namespace fedldp::fl_internal

#endif  // FEDLDP_SRC_FL_EXCHANGE_H_
