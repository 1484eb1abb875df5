#include "line_reader.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

namespace fedldp::internal {

LineReader::LineReader(const std::string& path, std::size_t max_line_bytes)
    : path_(path), max_line_bytes_(max_line_bytes) {
  errno = 0;
  file_ = gzopen(path.c_str(), "rb");
  if (file_ == nullptr) {
    open_status_ = Error{path + ": cannot open (" + (errno ? std::strerror(errno) : "zlib") + ")"};
  } else {
    gzbuffer(file_, 1 << 17);
  }
}

LineReader::~LineReader() {
  if (file_ != nullptr) gzclose(file_);
}

// The first line's byte order mark: UTF-8's is dropped (else it joins the
// first column's name); UTF-16's fails the reading with the fix.
bool LineReader::StripByteOrderMark(std::string& line) {
  if (line.rfind("\xEF\xBB\xBF", 0) == 0) {
    line.erase(0, 3);
  } else if (line.rfind("\xFF\xFE", 0) == 0 || line.rfind("\xFE\xFF", 0) == 0) {
    read_status_ = Error{Where("the file is UTF-16 text; save it as UTF-8 (or ASCII)")};
    return false;
  }
  return true;
}

std::optional<std::string> LineReader::Next() {
  if (file_ == nullptr) return std::nullopt;
  std::string line;
  char chunk[4096];
  while (true) {
    if (gzgets(file_, chunk, sizeof chunk) == nullptr) {
      int code = 0;
      const char* message = gzerror(file_, &code);
      if (code != Z_OK && code != Z_STREAM_END) {
        read_status_ = Error{Where(std::string("read error: ") + message), ErrorCode::kIo};
        return std::nullopt;
      }
      if (line.empty()) return std::nullopt;
      break;
    }
    line.append(chunk);
    if (line.size() > max_line_bytes_ + 2) {  // + "\r\n"
      ++line_;
      read_status_ = Error{Where("line longer than " + std::to_string(max_line_bytes_) +
                                 " bytes (the longest a loader reads)")};
      return std::nullopt;
    }
    if (!line.empty() && line.back() == '\n') break;
  }
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  ++line_;
  if (line_ == 1 && !StripByteOrderMark(line)) return std::nullopt;
  return line;
}

std::string LineReader::Where(const std::string& reason) const {
  return path_ + ":" + std::to_string(line_) + ": " + reason;
}

std::vector<std::string> SplitFields(const std::string& line, char separator) {
  std::vector<std::string> fields;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = line.find(separator, start);
    std::string field =
        line.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const auto first = field.find_first_not_of(" \t");
    const auto last = field.find_last_not_of(" \t");
    field = first == std::string::npos ? std::string() : field.substr(first, last - first + 1);
    if (field.size() >= 2 && field.front() == '"' && field.back() == '"') {
      field = field.substr(1, field.size() - 2);
    }
    fields.push_back(std::move(field));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return fields;
}

std::optional<double> ParseNumber(const std::string& text) {
  double value = 0;
  const char* begin = text.data();
  const char* end = begin + text.size();
  if (begin != end && *begin == '+') ++begin;
  const auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr != end || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::optional<float> ParseFloat(const std::string& text) {
  const auto value = ParseNumber(text);
  if (!value || std::fabs(*value) > std::numeric_limits<float>::max()) return std::nullopt;
  return static_cast<float>(*value);
}

Status CheckSize(std::size_t rows, std::size_t dimension, const LoadLimits& limits) {
  if (dimension > limits.max_dimension) {
    return Error{"dimension " + std::to_string(dimension) +
                 " exceeds the largest a loader accepts (" + std::to_string(limits.max_dimension) +
                 ")"};
  }
  if (dimension != 0 && rows > limits.max_cells / dimension) {
    return Error{std::to_string(rows) + " rows of " + std::to_string(dimension) +
                 " features exceed the most a loader holds in memory (" +
                 std::to_string(limits.max_cells) + " features)"};
  }
  return {};
}

}  // namespace fedldp::internal
