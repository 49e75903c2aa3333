// A small streaming JSON writer for reports (pretty-printed, keys in insertion order).
// Not thread-safe; one writer builds one document.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mimic {

class JsonWriter {
 public:
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  // Writes the key of the next member; REQUIRES: inside an object.
  JsonWriter& Key(std::string_view key);

  JsonWriter& String(std::string_view v);
  JsonWriter& Int(int64_t v);
  // Non-finite doubles are written as null (JSON has no NaN).
  JsonWriter& Double(double v);
  JsonWriter& Bool(bool v);
  JsonWriter& Null();
  // A double or null.
  JsonWriter& Optional(std::optional<double> v) { return v ? Double(*v) : Null(); }
  // A string, or null where it is empty.
  JsonWriter& StringOrNull(std::string_view v) { return v.empty() ? Null() : String(v); }

  // The document so far; complete once every Begin has its End.
  const std::string& str() const { return out_; }

 private:
  void BeforeValue();
  void Newline();
  std::string out_;
  struct Level {
    bool is_object;
    int count;
  };
  std::vector<Level> stack_;
  bool after_key_ = false;
};

// Appends `s` to `out` as a JSON string literal (quotes included).
void AppendJsonString(std::string& out, std::string_view s);

}  // namespace mimic
