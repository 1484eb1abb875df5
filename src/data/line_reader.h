// Reads a text file line by line, plain or gzip (zlib detects which), and
// formats errors as "path:line: reason". A UTF-8 byte order mark is
// dropped; UTF-16 text is refused.
#ifndef FEDLDP_SRC_DATA_LINE_READER_H_
#define FEDLDP_SRC_DATA_LINE_READER_H_

#include <zlib.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "fedldp/base/status.h"
#include "fedldp/data/loaders.h"

namespace fedldp::internal {

class LineReader {
 public:
  // Lines longer than max_line_bytes end the reading with a failed read_status().
  explicit LineReader(const std::string& path,
                      std::size_t max_line_bytes = LoadLimits{}.max_line_bytes);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // Failed if the file could not be opened: check before reading.
  const Status& open_status() const { return open_status_; }
  // The next line without its end-of-line characters, or nullopt at the end.
  // Fails read_status() on a decompression error or an overlong line.
  std::optional<std::string> Next();
  const Status& read_status() const { return read_status_; }
  std::size_t line() const { return line_; }
  // "path:line: reason" for the line last returned.
  std::string Where(const std::string& reason) const;

 private:
  bool StripByteOrderMark(std::string& line);

  std::string path_;
  std::size_t max_line_bytes_;
  gzFile file_ = nullptr;
  Status open_status_, read_status_;
  std::size_t line_ = 0;
};

// Splits on a single-character separator and trims spaces and one pair of
// surrounding double quotes from each field.
std::vector<std::string> SplitFields(const std::string& line, char separator);
// Whole-string conversion; nullopt unless the text is a finite number.
std::optional<double> ParseNumber(const std::string& text);
// The same, and nullopt unless the number also fits a float (|x| <= FLT_MAX).
std::optional<float> ParseFloat(const std::string& text);

// OK if `rows` rows of `dimension` features fit the limits; otherwise why
// not, naming the bound (no product is formed that could overflow).
Status CheckSize(std::size_t rows, std::size_t dimension, const LoadLimits& limits);

}  // namespace fedldp::internal

#endif  // FEDLDP_SRC_DATA_LINE_READER_H_
