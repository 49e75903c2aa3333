// Status and Result<T>: how every Mimic library reports failure across a component boundary.
// A Status names what is wrong and where ("file:position: message"). Library code never exits
// and never prints; the CLI maps Status codes to exit codes. Thread-compatible value types.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace mimic {

enum class StatusCode {
  kOk = 0,
  kInvalidInput,  // the user's input is malformed or inconsistent (exit code 2)
  kUnsupported,   // well-formed input Mimic cannot handle (exit code 2)
  kNotFound,      // a named thing does not exist (exit code 2)
  kIo,            // the environment failed: read/write errors (exit code 1)
  kInternal,      // a bug or a runtime failure (exit code 1)
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status InvalidInput(std::string msg) { return Status(StatusCode::kInvalidInput, std::move(msg)); }
  static Status Unsupported(std::string msg) { return Status(StatusCode::kUnsupported, std::move(msg)); }
  static Status NotFound(std::string msg) { return Status(StatusCode::kNotFound, std::move(msg)); }
  static Status Io(std::string msg) { return Status(StatusCode::kIo, std::move(msg)); }
  static Status Internal(std::string msg) { return Status(StatusCode::kInternal, std::move(msg)); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // True for the codes that mean "the input is bad" (the CLI's exit code 2).
  bool IsInputError() const {
    return code_ == StatusCode::kInvalidInput || code_ == StatusCode::kUnsupported ||
           code_ == StatusCode::kNotFound;
  }
  // Returns a copy whose message is prefixed with `context` and ": ".
  Status WithContext(const std::string& context) const {
    if (ok()) return *this;
    return Status(code_, context + ": " + message_);
  }
  std::string ToString() const;

 private:
  Status(StatusCode code, std::string msg) : code_(code), message_(std::move(msg)) {}
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}             // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}      // NOLINT: REQUIRES: !status.ok()

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace mimic

// Returns early from the calling function when `expr` is not OK.
#define MIMIC_RETURN_IF_ERROR(expr)          \
  do {                                       \
    ::mimic::Status _mimic_st = (expr);      \
    if (!_mimic_st.ok()) return _mimic_st;   \
  } while (0)

#define MIMIC_CONCAT_INNER(a, b) a##b
#define MIMIC_CONCAT(a, b) MIMIC_CONCAT_INNER(a, b)
// MIMIC_ASSIGN_OR_RETURN(auto x, ComputeResult()): binds the value or returns the error.
#define MIMIC_ASSIGN_OR_RETURN(lhs, expr) \
  MIMIC_ASSIGN_OR_RETURN_IMPL(MIMIC_CONCAT(_mimic_res_, __LINE__), lhs, expr)
#define MIMIC_ASSIGN_OR_RETURN_IMPL(res, lhs, expr) \
  auto res = (expr);                                \
  if (!res.ok()) return res.status();               \
  lhs = std::move(res).value()

// Invariant checks that stay on in release builds (a bug, not bad input, when they fire).
#define MIMIC_CHECK(cond)                                                             \
  do {                                                                                \
    if (!(cond)) ::mimic::internal::CheckFailed(__FILE__, __LINE__, #cond);           \
  } while (0)

namespace mimic::internal {
[[noreturn]] void CheckFailed(const char* file, int line, const char* cond);
}  // namespace mimic::internal
