// Errors as values at module boundaries.
//
// Builders (`Create`) validate every parameter and return either a valid object
// or an Error whose message is one sentence a user can act on. Nothing in the
// library constructs a half-valid mechanism or selector.
#ifndef FEDLDP_BASE_STATUS_H_
#define FEDLDP_BASE_STATUS_H_

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace fedldp {

// What kind of failure an Error is, for a caller that acts on it (the CLI's
// exit code, the gRPC status of a refused call) without reading its words.
enum class ErrorCode {
  kOk,                  // no error: the code of an OK Status or Result
  kInvalidArgument,     // the caller's input or configuration: fix it, call again
  kFailedPrecondition,  // not in this state (e.g. a session that ended: join again)
  kAlreadyExists,       // held by another (e.g. a token in use by another client)
  kPermissionDenied,    // not allowed for these credentials
  kUnauthenticated,     // credentials missing, unknown or inconsistent
  kIo,                  // a file could not be read or written
  kResourceExhausted,   // more than allowed for now (e.g. a client's bytes this round)
};

struct Error {
  std::string message;
  ErrorCode code = ErrorCode::kInvalidArgument;
};

// Thrown only by Result::value() on misuse (reading the value of an error).
class BadResultAccess : public std::logic_error {
 public:
  explicit BadResultAccess(const std::string& message) : std::logic_error(message) {}
};

// The outcome of an operation that returns nothing else: OK, or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(Error error)  // NOLINT: implicit by design
      : message_(std::move(error.message)),
        // An Error is never OK, whatever its code says.
        code_(error.code == ErrorCode::kOk ? ErrorCode::kInvalidArgument : error.code),
        failed_(true) {}
  static Status Ok() { return {}; }

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  // The error's sentence; empty when ok().
  const std::string& error() const { return message_; }
  // The error's kind; kOk when ok().
  ErrorCode code() const { return code_; }

 private:
  std::string message_;
  ErrorCode code_ = ErrorCode::kOk;
  bool failed_ = false;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : data_(std::move(error)) {}  // NOLINT: implicit by design
  // A failed Status's error (`return why;` where `why` is not OK). An OK
  // Status holds no value: passing one is a logic error.
  Result(const Status& status)  // NOLINT: implicit by design
      : data_(Error{status.error(), status.code()}) {
    if (status.ok()) throw BadResultAccess("fedldp::Result made from an OK Status");
  }

  bool ok() const { return std::holds_alternative<T>(data_); }
  explicit operator bool() const { return ok(); }

  const T& value() const& {
    Check();
    return std::get<T>(data_);
  }
  T& value() & {
    Check();
    return std::get<T>(data_);
  }
  T&& value() && {
    Check();
    return std::get<T>(std::move(data_));
  }
  const T& operator*() const& { return value(); }
  const T* operator->() const { return &value(); }

  const std::string& error() const { return std::get<Error>(data_).message; }
  // kOk when ok(); an Error that claims kOk is still an error.
  ErrorCode code() const {
    if (ok()) return ErrorCode::kOk;
    const ErrorCode c = std::get<Error>(data_).code;
    return c == ErrorCode::kOk ? ErrorCode::kInvalidArgument : c;
  }

 private:
  void Check() const {
    if (!ok()) throw BadResultAccess("fedldp::Result holds an error: " + error());
  }
  std::variant<T, Error> data_;
};

// Moves a built object behind a shared pointer to its interface, or passes
// the error on: the last step of every factory that picks a type by name.
template <typename Base, typename T>
Result<std::shared_ptr<const Base>> ShareAs(Result<T> made) {
  if (!made.ok()) return Error{made.error(), made.code()};
  return std::shared_ptr<const Base>(std::make_shared<T>(std::move(made).value()));
}

// Passing an error on, as Google DP's status_macros.h does. In a function
// returning Status or a Result:
//   FEDLDP_RETURN_IF_ERROR(config.Validate());          // Status or Result
//   FEDLDP_ASSIGN_OR_RETURN(auto plan, PlanFedSel(...));  // plan is the value
// return the failed operation's error, message and code, unchanged.
#define FEDLDP_RETURN_IF_ERROR(expr)                                         \
  do {                                                                       \
    if (const auto& fedldp_status_ = (expr); !fedldp_status_.ok()) {         \
      return ::fedldp::Error{fedldp_status_.error(), fedldp_status_.code()}; \
    }                                                                        \
  } while (false)

#define FEDLDP_STATUS_CONCAT_(a, b) a##b
#define FEDLDP_STATUS_NAME_(line) FEDLDP_STATUS_CONCAT_(fedldp_result_, line)
#define FEDLDP_ASSIGN_OR_RETURN(lhs, expr) \
  FEDLDP_ASSIGN_OR_RETURN_(FEDLDP_STATUS_NAME_(__LINE__), lhs, expr)
#define FEDLDP_ASSIGN_OR_RETURN_(result, lhs, expr)                        \
  auto result = (expr);                                                    \
  if (!result.ok()) return ::fedldp::Error{result.error(), result.code()}; \
  lhs = std::move(result).value()

// Parameter checks shared by every builder: OK when the value is
// acceptable, otherwise kInvalidArgument with a sentence naming the
// parameter.
Status CheckEpsilon(double epsilon, const char* name = "epsilon");
// A target delta: in [kMinDelta, 1). Below 1e-12 the rounding of the doubles
// the accountants sum would matter against delta itself.
inline constexpr double kMinDelta = 1e-12;
Status CheckDelta(double delta, const char* name = "delta");
Status CheckFinite(double value, const char* name);
Status CheckPositive(double value, const char* name);

// `message` as one line, as a refusal is said on a terminal or in a log:
// its lines joined with "; ", blank ones and trailing blanks dropped (a
// message of several lines printed a refusal over several lines).
inline std::string OneLine(std::string_view message) {
  std::string out;
  std::size_t begin = 0;
  while (begin <= message.size()) {
    const std::size_t end = std::min(message.find('\n', begin), message.size());
    std::string_view line = message.substr(begin, end - begin);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r' || line.back() == '\t')) {
      line.remove_suffix(1);
    }
    if (!line.empty()) {
      if (!out.empty()) out += "; ";
      out += line;
    }
    begin = end + 1;
  }
  return out;
}

}  // namespace fedldp

#endif  // FEDLDP_BASE_STATUS_H_
