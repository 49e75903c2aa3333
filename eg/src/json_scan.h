// A minimal structural scanner over a JSON buffer: finds the extent of values without building
// anything, so that large traces can be walked element by element and each element handed to
// simdjson's DOM parser on its own (no index or DOM of the whole file is ever held).
// Not thread-safe; one scanner walks one buffer.
#pragma once

#include <simdjson.h>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "mimic/base/status.h"

namespace mimic::eg {

class JsonScanner {
 public:
  explicit JsonScanner(std::string_view json) : begin_(json.data()), p_(json.data()), end_(json.data() + json.size()) {}

  // Skips whitespace; returns the next byte or 0 at the end.
  char Peek();
  // Consumes `c` (after whitespace); false if the next byte is something else.
  bool Consume(char c);
  // Reads a string token (after whitespace) and returns its raw contents (escapes left as is).
  bool ReadString(std::string_view* out);
  // Skips one complete value (after whitespace) and returns its bytes; false when malformed.
  bool ScanValue(std::string_view* out);

  size_t offset() const { return static_cast<size_t>(p_ - begin_); }
  bool at_end() { return Peek() == 0; }
  // Why the last call failed and where ("byte N: ...").
  const std::string& error() const { return error_; }

 private:
  bool Fail(const char* what);
  bool SkipString();
  const char* begin_;
  const char* p_;
  const char* end_;
  std::string error_;
};

// Walks the top-level JSON object in `json` (padded for simdjson). Each element of the member
// named `array_key` (which must be an array) is DOM-parsed on its own and given to
// `on_element(element, index, byte_offset)`; every other member is DOM-parsed and given to
// `on_member(key, value, byte_offset)`. Sets *found_array when the member exists. Errors name
// `path` and the byte offset; a callback's error is returned as is.
using ElementFn = std::function<Status(simdjson::dom::element, size_t index, size_t offset)>;
using MemberFn =
    std::function<Status(std::string_view key, simdjson::dom::element, size_t offset)>;
Status WalkTopLevelObject(const std::string& path, std::string_view json,
                          std::string_view array_key, const ElementFn& on_element,
                          const MemberFn& on_member, bool* found_array);

}  // namespace mimic::eg
