// What the deployment's commands (enrol, serve, client, shuffle) share.
#ifndef FEDLDP_APPS_FEDLDP_DEPLOY_UTIL_H_
#define FEDLDP_APPS_FEDLDP_DEPLOY_UTIL_H_

#include <atomic>
#include <string>
#include <vector>

#include "fedldp/data/dataset.h"

namespace fedldp::cli {

// Set by SIGTERM or SIGINT once CatchSignals ran; the loops poll it.
extern std::atomic<bool> g_stop;
void CatchSignals();
// "A:B" (half-open), or all rows of `n` when empty.
std::vector<std::size_t> ParseRows(const std::string& spec, std::size_t n, const char* flag);
// Part i of P ("i/P", i from 1): the i-th of P contiguous, near-equal chunks.
std::vector<std::size_t> TakePart(const std::vector<std::size_t>& rows, const std::string& spec);
Dataset LoadData(const std::string& name, const std::string& dir);
std::string Stamp();  // HH:MM:SS, for log lines
std::string Pct(double x);
// The first line of `path`; a usage error naming `flag` if there is none.
std::string ReadToken(const std::string& path, const char* flag);

}  // namespace fedldp::cli

#endif  // FEDLDP_APPS_FEDLDP_DEPLOY_UTIL_H_
