#include "json_scan.h"

#include <cstring>

namespace mimic::eg {

bool JsonScanner::Fail(const char* what) {
  error_ = "byte " + std::to_string(offset()) + ": " + what;
  return false;
}

char JsonScanner::Peek() {
  while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  return p_ < end_ ? *p_ : 0;
}

bool JsonScanner::Consume(char c) {
  if (Peek() != c) return false;
  ++p_;
  return true;
}

// REQUIRES: *p_ == '"'. Leaves p_ just past the closing quote.
bool JsonScanner::SkipString() {
  const char* q = p_ + 1;
  while (true) {
    const void* hit = std::memchr(q, '"', static_cast<size_t>(end_ - q));
    if (!hit) return Fail("unterminated string");
    q = static_cast<const char*>(hit);
    size_t backslashes = 0;
    for (const char* b = q - 1; b > p_ && *b == '\\'; --b) ++backslashes;
    if (backslashes % 2 == 0) break;
    ++q;
  }
  p_ = q + 1;
  return true;
}

bool JsonScanner::ReadString(std::string_view* out) {
  if (Peek() != '"') return Fail("expected a string");
  const char* start = p_;
  if (!SkipString()) return false;
  *out = std::string_view(start + 1, static_cast<size_t>(p_ - start - 2));
  return true;
}

bool JsonScanner::ScanValue(std::string_view* out) {
  const char c = Peek();
  const char* start = p_;
  if (c == 0) return Fail("unexpected end of input");
  if (c == '"') {
    if (!SkipString()) return false;
  } else if (c == '{' || c == '[') {
    // Depth-tracked walk; strings are skipped whole so brackets inside them do not count.
    int depth = 0;
    while (p_ < end_) {
      const char ch = *p_;
      if (ch == '"') {
        if (!SkipString()) return false;
        continue;
      }
      if (ch == '{' || ch == '[') {
        if (++depth > 1024) return Fail("nesting deeper than 1024 levels");
      } else if (ch == '}' || ch == ']') {
        if (--depth == 0) {
          ++p_;
          break;
        }
      }
      ++p_;
    }
    if (depth != 0) {
      p_ = start;
      return Fail("unterminated array or object");
    }
  } else {
    while (p_ < end_ && *p_ != ',' && *p_ != '}' && *p_ != ']' && *p_ != ' ' && *p_ != '\n' &&
           *p_ != '\r' && *p_ != '\t')
      ++p_;
  }
  *out = std::string_view(start, static_cast<size_t>(p_ - start));
  return true;
}

namespace {
Status At(const std::string& path, size_t offset, const std::string& what) {
  return Status::InvalidInput(path + ":byte " + std::to_string(offset) + ": " + what);
}
}  // namespace

Status WalkTopLevelObject(const std::string& path, std::string_view json,
                          std::string_view array_key, const ElementFn& on_element,
                          const MemberFn& on_member, bool* found_array) {
  simdjson::dom::parser parser;
  JsonScanner scan(json);
  *found_array = false;
  if (!scan.Consume('{')) return At(path, scan.offset(), "expected a JSON object");
  while (!scan.Consume('}')) {
    std::string_view key;
    if (!scan.ReadString(&key)) return Status::InvalidInput(path + ":" + scan.error());
    if (!scan.Consume(':')) return At(path, scan.offset(), "expected ':'");
    if (key == array_key) {
      *found_array = true;
      if (!scan.Consume('['))
        return At(path, scan.offset(), "\"" + std::string(array_key) + "\" is not an array");
      size_t index = 0;
      while (!scan.Consume(']')) {
        const size_t at = scan.offset();
        std::string_view raw;
        if (!scan.ScanValue(&raw)) return Status::InvalidInput(path + ":" + scan.error());
        simdjson::dom::element element;
        if (auto err = parser.parse(raw.data(), raw.size(), false).get(element))
          return At(path, at, std::string(array_key) + "[" + std::to_string(index) + "]: " +
                                  simdjson::error_message(err));
        MIMIC_RETURN_IF_ERROR(on_element(element, index, at));
        ++index;
        if (!scan.Consume(',') && scan.Peek() != ']')
          return At(path, scan.offset(), "expected ',' or ']'");
      }
    } else {
      const size_t at = scan.offset();
      std::string_view raw;
      if (!scan.ScanValue(&raw)) return Status::InvalidInput(path + ":" + scan.error());
      simdjson::dom::element value;
      if (auto err = parser.parse(raw.data(), raw.size(), false).get(value))
        return At(path, at, simdjson::error_message(err));
      MIMIC_RETURN_IF_ERROR(on_member(key, value, at));
    }
    if (!scan.Consume(',') && scan.Peek() != '}')
      return At(path, scan.offset(), "expected ',' or '}'");
  }
  if (!scan.at_end()) return At(path, scan.offset(), "trailing data after the JSON object");
  return Status::Ok();
}

}  // namespace mimic::eg
