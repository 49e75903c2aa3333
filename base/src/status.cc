#include "mimic/base/status.h"

#include <cstdio>
#include <cstdlib>

namespace mimic {

std::string Status::ToString() const {
  switch (code_) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidInput: return "invalid input: " + message_;
    case StatusCode::kUnsupported: return "unsupported: " + message_;
    case StatusCode::kNotFound: return "not found: " + message_;
    case StatusCode::kIo: return "I/O error: " + message_;
    case StatusCode::kInternal: return "internal error: " + message_;
  }
  return message_;
}

namespace internal {
void CheckFailed(const char* file, int line, const char* cond) {
  std::fprintf(stderr, "mimic: internal check failed at %s:%d: %s\n", file, line, cond);
  std::abort();
}
}  // namespace internal

}  // namespace mimic
