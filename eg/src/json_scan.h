// Streaming structural walk over large JSON traces. The top-level object is scanned through a
// window that slides over the (decompressed) input; each element of the one big array
// (`nodes`, `traceEvents`) is cut out by a bracket-matching scanner and handed to simdjson's DOM
// parser on its own. Neither the whole JSON text nor an index or DOM of it is ever held: memory
// stays at the window (about the largest element) plus what the callbacks keep.
// Not thread-safe; one walk at a time per source.
#pragma once

#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "mimic/base/file.h"
#include "mimic/base/status.h"

namespace mimic::eg {

// Scans tokens in [data, data + size). When `final` is false more input may follow, and a token
// that runs into the end sets incomplete() instead of failing for good.
class JsonScanner {
 public:
  JsonScanner(const char* data, size_t size, size_t pos, bool final)
      : begin_(data), p_(data + pos), end_(data + size), final_(final) {}

  // Skips whitespace; returns the next byte, or 0 at the end of the input (or window).
  char Peek();
  // Consumes `c` (after whitespace); false if the next byte is something else.
  bool Consume(char c);
  // Reads a string token (after whitespace) and returns its raw contents (escapes left as is).
  bool ReadString(std::string_view* out);
  // Skips one complete value (after whitespace) and returns its bytes; false when malformed.
  bool ScanValue(std::string_view* out);

  size_t pos() const { return static_cast<size_t>(p_ - begin_); }
  // True when the last failure was the window ending inside a token.
  bool incomplete() const { return incomplete_; }
  // Why the last call failed, and at which offset in the window.
  const std::string& error() const { return error_; }
  size_t error_pos() const { return error_pos_; }

 private:
  bool Fail(const char* what);
  bool AtEnd();
  bool SkipString();
  bool SkipContainer();
  const char* begin_;
  const char* p_;
  const char* end_;
  bool final_;
  bool incomplete_ = false;
  std::string error_;
  size_t error_pos_ = 0;
};

using ElementFn = std::function<Status(simdjson::dom::element, size_t index, size_t offset)>;
using MemberFn =
    std::function<Status(std::string_view key, simdjson::dom::element, size_t offset)>;

// Walks the top-level JSON object read from `in`. Each element of the member named
// `array_key` (which must be an array) is DOM-parsed on its own and given to
// `on_element(element, index, byte_offset)`; every other member is DOM-parsed and given to
// `on_member(key, value, byte_offset)`. Sets *found_array when the member exists. Errors name
// `path` and the byte offset in the decompressed JSON; a callback's error is returned as is.
Status WalkTopLevelObject(const std::string& path, InputStream& in, std::string_view array_key,
                          const ElementFn& on_element, const MemberFn& on_member,
                          bool* found_array);

// A JSON double as an integer, truncated toward zero; false when it is not finite or lies
// outside int64_t (a cast would be undefined there).
inline bool TruncateToInt64(double d, int64_t* out) {
  // 2^63 is exact as a double; every double below it and at or above -2^63 fits.
  constexpr double kLimit = 9223372036854775808.0;
  if (!(d > -kLimit - 1.0 && d < kLimit)) return false;
  *out = static_cast<int64_t>(d);
  return true;
}

}  // namespace mimic::eg
