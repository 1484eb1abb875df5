// fedldp benchmarks. Besides Google Benchmark's own table, prints every
// throughput beside a plain memory copy of the same data measured in the same
// run ("memcpy/<bytes>" benchmarks), because these machines are noisy and a
// ratio travels better than an absolute number.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace {

// Benchmarks declare per iteration how many items they process ("items") and
// how many bytes those items occupy ("bytes"); memcpy/<bytes> copies that many
// bytes. ratio = (bytes processed per second) / (bytes copied per second).
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const auto& run : runs) {
      if (run.run_type != Run::RT_Iteration || run.error_occurred) continue;
      const auto rate = run.counters.find("items_per_second");
      const auto bytes = run.counters.find("bytes");
      const auto items = run.counters.find("items");
      if (rate == run.counters.end() || bytes == run.counters.end()) continue;
      const std::string name = run.benchmark_name();
      const long size = static_cast<long>(bytes->second.value);
      if (name.rfind("memcpy/", 0) == 0) {
        copy_bytes_per_second_[size] =
            rate->second.value * bytes->second.value / items->second.value;
      } else {
        rows_.push_back({name, rate->second.value, size, items->second.value});
      }
    }
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\n%-46s %12s %14s %16s\n", "benchmark", "M items/s", "memcpy GB/s",
                "ratio to memcpy");
    for (const auto& row : rows_) {
      const auto copy = copy_bytes_per_second_.find(row.bytes);
      if (copy == copy_bytes_per_second_.end()) {
        std::printf("%-46s %12.1f %14s %16s\n", row.name.c_str(), row.rate / 1e6, "-", "-");
        continue;
      }
      const double bytes_per_second = row.rate * static_cast<double>(row.bytes) / row.items;
      std::printf("%-46s %12.1f %14.2f %16.3f\n", row.name.c_str(), row.rate / 1e6,
                  copy->second / 1e9, bytes_per_second / copy->second);
    }
  }

 private:
  struct Row {
    std::string name;
    double rate;   // items per second
    long bytes;    // bytes of the items per iteration
    double items;  // items per iteration
  };
  std::vector<Row> rows_;
  std::map<long, double> copy_bytes_per_second_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
