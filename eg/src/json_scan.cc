#include "json_scan.h"

#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace mimic::eg {

bool JsonScanner::Fail(const char* what) {
  error_ = what;
  error_pos_ = pos();
  return false;
}

// At the end of the window: final input ends here, otherwise the token is incomplete.
bool JsonScanner::AtEnd() {
  if (p_ < end_) return false;
  if (!final_) incomplete_ = true;
  return true;
}

char JsonScanner::Peek() {
  while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  if (AtEnd()) return 0;
  return *p_;
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
    const void* hit = q < end_ ? std::memchr(q, '"', static_cast<size_t>(end_ - q)) : nullptr;
    if (!hit) {
      if (!final_) incomplete_ = true;
      return Fail("unterminated string");
    }
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
  if (Peek() != '"') return Fail(incomplete_ ? "unexpected end of input" : "expected a string");
  const char* start = p_;
  if (!SkipString()) return false;
  *out = std::string_view(start + 1, static_cast<size_t>(p_ - start - 2));
  return true;
}

namespace {

constexpr int kMaxDepth = 1024;

#if defined(__SSE2__)
__m128i Load16(const char* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
// '[' -> '{' and ']' -> '}' (no other byte becomes either).
__m128i Fold(__m128i v) { return _mm_or_si128(v, _mm_set1_epi8(0x20)); }
// Bit i set when byte i of the 64 is `c`.
[[gnu::always_inline]] inline uint64_t Bits(const __m128i (&v)[4], char c) {
  const __m128i n = _mm_set1_epi8(c);
  auto mask = [&](int k) {
    return static_cast<uint64_t>(static_cast<uint16_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v[k], n))));
  };
  return mask(0) | mask(1) << 16 | mask(2) << 32 | mask(3) << 48;
}
bool Any(const __m128i (&v)[4], char c) {
  const __m128i n = _mm_set1_epi8(c);
  const __m128i hits = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v[0], n), _mm_cmpeq_epi8(v[1], n)),
                                    _mm_or_si128(_mm_cmpeq_epi8(v[2], n), _mm_cmpeq_epi8(v[3], n)));
  return _mm_movemask_epi8(hits) != 0;
}
#endif

// Bracket matching over a container, fed block by block. Strings are tracked so that brackets
// inside them do not count.
struct BracketWalk {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;                // the last byte was a backslash inside a string
  const char* string_start = nullptr;  // the open string's quote (Bytes only)
  const char* end = nullptr;           // just past the matching close bracket, once found
  const char* too_deep = nullptr;      // the bracket that nested deeper than kMaxDepth

  bool done() const { return end || too_deep; }

  // Walks [p, limit) one byte at a time; stops when done().
  void Bytes(const char* p, const char* limit) {
    for (; p < limit; ++p) {
      const char c = *p;
      if (in_string) {
        if (escaped)
          escaped = false;
        else if (c == '\\')
          escaped = true;
        else if (c == '"')
          in_string = false;
      } else if (c == '"') {
        in_string = true;
        string_start = p;
      } else if (c == '{' || c == '[') {
        if (++depth > kMaxDepth) return void(too_deep = p);
      } else if (c == '}' || c == ']') {
        if (--depth == 0) return void(end = p + 1);
      }
    }
  }

#if defined(__SSE2__)
  // Walks the 64 bytes at p, 16 at a time; false (nothing done) when they hold a backslash or
  // an escape is pending, which Bytes handles.
  bool Block64(const char* p) {
    if (escaped) return false;
    const __m128i v[4] = {Load16(p), Load16(p + 16), Load16(p + 32), Load16(p + 48)};
    if (Any(v, '\\')) return false;
    const __m128i folded[4] = {Fold(v[0]), Fold(v[1]), Fold(v[2]), Fold(v[3])};
    const uint64_t opens = Bits(folded, '{'), closes = Bits(folded, '}');
    // Bit i of `strings`: an odd number of quotes at or before i (inside a string or its
    // opening quote), flipped when the block starts inside a string.
    uint64_t strings = Bits(v, '"');
    strings ^= strings << 1;
    strings ^= strings << 2;
    strings ^= strings << 4;
    strings ^= strings << 8;
    strings ^= strings << 16;
    strings ^= strings << 32;
    if (in_string) strings = ~strings;
    in_string = strings >> 63;
    for (uint64_t b = (opens | closes) & ~strings; b != 0; b &= b - 1) {
      const int i = __builtin_ctzll(b);
      if (opens >> i & 1) {
        if (++depth > kMaxDepth) return too_deep = p + i, true;
      } else if (--depth == 0) {
        return end = p + i + 1, true;
      }
    }
    return true;
  }
#else
  bool Block64(const char*) { return false; }
#endif
};

}  // namespace

// REQUIRES: *p_ is '{' or '['. Leaves p_ just past the matching bracket.
bool JsonScanner::SkipContainer() {
  BracketWalk walk;
  const size_t size = static_cast<size_t>(end_ - p_);
  for (size_t at = 0; at < size && !walk.done(); at += 64) {
    const char* block = p_ + at;
    const bool whole = size - at >= 64;
    if (!whole || !walk.Block64(block)) walk.Bytes(block, whole ? block + 64 : end_);
  }
  if (walk.too_deep) {
    p_ = walk.too_deep;
    return Fail("nesting deeper than 1024 levels");
  }
  if (walk.end) {
    p_ = walk.end;
    return true;
  }
  if (!final_) {  // the next window may complete it
    incomplete_ = true;
    return Fail("unterminated array or object");
  }
  // Out of input: once more byte by byte, to tell an open string (and where it opens) from an
  // open bracket.
  BracketWalk slow;
  slow.Bytes(p_, end_);
  if (slow.in_string) p_ = slow.string_start;
  return Fail(slow.in_string ? "unterminated string" : "unterminated array or object");
}

bool JsonScanner::ScanValue(std::string_view* out) {
  const char c = Peek();
  const char* start = p_;
  if (c == 0) return Fail("unexpected end of input");
  if (c == '"') {
    if (!SkipString()) return false;
  } else if (c == '{' || c == '[') {
    if (!SkipContainer()) return false;
  } else {
    while (p_ < end_ && *p_ != ',' && *p_ != '}' && *p_ != ']' && *p_ != ' ' && *p_ != '\n' &&
           *p_ != '\r' && *p_ != '\t')
      ++p_;
    if (p_ == end_ && !final_) {  // the number or literal may go on in the next window
      incomplete_ = true;
      return Fail("unexpected end of input");
    }
  }
  *out = std::string_view(start, static_cast<size_t>(p_ - start));
  return true;
}

namespace {

// The sliding window over the decompressed input. Consumed bytes are dropped on each refill;
// the window doubles when one token does not fit in it.
class Window {
 public:
  explicit Window(InputStream& in) : in_(in) { buf_.Reserve(kInitial); }

  // A scanner over the unconsumed bytes, starting at the consumed mark.
  JsonScanner Scanner() const { return JsonScanner(buf_.data(), buf_.size(), start_, eof_); }
  // Marks everything before `pos` (a scanner position) as consumed.
  void Consume(size_t pos) { start_ = pos; }
  // Absolute offset, in the decompressed input, of window position `pos`.
  size_t Offset(size_t pos) const { return base_ + pos; }
  bool eof() const { return eof_; }

  // Drops consumed bytes and reads more. False with *status set on a read error.
  bool Refill(Status* status) {
    const size_t keep = buf_.size() - start_;
    if (start_ > 0) std::memmove(buf_.mutable_data(), buf_.data() + start_, keep);
    base_ += start_;
    start_ = 0;
    buf_.Resize(keep);
    if (keep > buf_.capacity() / 2) buf_.Reserve(buf_.capacity() * 2);
    Result<size_t> n = in_.Read(buf_.mutable_data() + keep, buf_.capacity() - keep);
    if (!n.ok()) {
      *status = n.status();
      return false;
    }
    buf_.Resize(keep + *n);
    if (*n == 0) eof_ = true;
    return true;
  }

 private:
  static constexpr size_t kInitial = 64 << 10;  // stays in L2 while it is scanned and parsed
  InputStream& in_;
  PaddedBuffer buf_;
  size_t start_ = 0;
  size_t base_ = 0;
  bool eof_ = false;
};

Status At(const std::string& path, size_t offset, const std::string& what) {
  return Status::InvalidInput(path + ":byte " + std::to_string(offset) + ": " + what);
}

}  // namespace

Status WalkTopLevelObject(const std::string& path, InputStream& in, std::string_view array_key,
                          const ElementFn& on_element, const MemberFn& on_member,
                          bool* found_array) {
  Window window(in);
  simdjson::dom::parser parser;
  *found_array = false;

  // Runs one scanning step, refilling the window and retrying while the step runs into the
  // window's end. `step` returns false on failure, with the scanner telling why.
  Status io;
  auto step = [&](auto&& fn) -> Status {
    while (true) {
      JsonScanner scan = window.Scanner();
      if (fn(scan)) {
        window.Consume(scan.pos());
        return Status::Ok();
      }
      if (!scan.incomplete() || window.eof()) {
        const std::string why = scan.error().empty() ? "unexpected token" : scan.error();
        return At(path, window.Offset(scan.error().empty() ? scan.pos() : scan.error_pos()), why);
      }
      if (!window.Refill(&io)) return io;
    }
  };
  // Tries to consume `c`; *found tells whether it was there.
  auto consume = [&](char c, bool* found) {
    return step([&](JsonScanner& s) {
      const char next = s.Peek();
      if (next == 0 && s.incomplete()) return false;
      *found = next == c;
      if (*found) s.Consume(c);
      return true;
    });
  };

  bool found = false;
  MIMIC_RETURN_IF_ERROR(consume('{', &found));
  if (!found) return At(path, 0, "expected a JSON object");
  MIMIC_RETURN_IF_ERROR(consume('}', &found));
  std::string key;
  while (!found) {
    size_t key_at = 0;
    MIMIC_RETURN_IF_ERROR(step([&](JsonScanner& s) {
      std::string_view k;
      if (!s.ReadString(&k)) return false;
      key_at = window.Offset(s.pos());
      key.assign(k);
      return true;
    }));
    MIMIC_RETURN_IF_ERROR(consume(':', &found));
    if (!found) return At(path, key_at, "expected ':'");
    if (key == array_key) {
      *found_array = true;
      MIMIC_RETURN_IF_ERROR(consume('[', &found));
      if (!found) return At(path, key_at, "\"" + key + "\" is not an array");
      MIMIC_RETURN_IF_ERROR(consume(']', &found));
      for (size_t index = 0; !found; ++index) {
        std::string_view raw;
        size_t at = 0;
        MIMIC_RETURN_IF_ERROR(step([&](JsonScanner& s) {
          s.Peek();
          at = window.Offset(s.pos());
          return s.ScanValue(&raw);
        }));
        // The window keeps `raw` (and simdjson's padding past it) until the next refill.
        simdjson::dom::element element;
        if (auto err = parser.parse(raw.data(), raw.size(), false).get(element))
          return At(path, at, key + "[" + std::to_string(index) + "]: " + simdjson::error_message(err));
        MIMIC_RETURN_IF_ERROR(on_element(element, index, at));
        MIMIC_RETURN_IF_ERROR(consume(',', &found));
        if (found) {
          found = false;
          continue;
        }
        MIMIC_RETURN_IF_ERROR(consume(']', &found));
        if (!found) return At(path, window.Offset(window.Scanner().pos()), "expected ',' or ']'");
      }
    } else {
      std::string_view raw;
      size_t at = 0;
      MIMIC_RETURN_IF_ERROR(step([&](JsonScanner& s) {
        s.Peek();
        at = window.Offset(s.pos());
        return s.ScanValue(&raw);
      }));
      simdjson::dom::element value;
      if (auto err = parser.parse(raw.data(), raw.size(), false).get(value))
        return At(path, at, simdjson::error_message(err));
      MIMIC_RETURN_IF_ERROR(on_member(key, value, at));
    }
    MIMIC_RETURN_IF_ERROR(consume(',', &found));
    if (found) {
      found = false;
      continue;
    }
    MIMIC_RETURN_IF_ERROR(consume('}', &found));
    if (!found) return At(path, window.Offset(window.Scanner().pos()), "expected ',' or '}'");
  }
  MIMIC_RETURN_IF_ERROR(consume(0, &found));
  if (!found) return At(path, window.Offset(window.Scanner().pos()), "trailing data after the JSON object");
  return Status::Ok();
}

}  // namespace mimic::eg
