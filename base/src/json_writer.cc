#include "mimic/base/json_writer.h"

#include <cmath>
#include <cstdio>

#include "mimic/base/status.h"

namespace mimic {

void AppendJsonString(std::string& out, std::string_view s) {
  out.push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
}

void JsonWriter::Newline() {
  out_.push_back('\n');
  out_.append(stack_.size() * 2, ' ');
}

void JsonWriter::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (stack_.empty()) return;
  MIMIC_CHECK(!stack_.back().is_object);
  if (stack_.back().count++ > 0) out_.push_back(',');
  Newline();
}

JsonWriter& JsonWriter::Key(std::string_view key) {
  MIMIC_CHECK(!stack_.empty() && stack_.back().is_object && !after_key_);
  if (stack_.back().count++ > 0) out_.push_back(',');
  Newline();
  AppendJsonString(out_, key);
  out_ += ": ";
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::BeginObject() {
  BeforeValue();
  out_.push_back('{');
  stack_.push_back({true, 0});
  return *this;
}

JsonWriter& JsonWriter::EndObject() {
  MIMIC_CHECK(!stack_.empty() && stack_.back().is_object);
  const bool empty = stack_.back().count == 0;
  stack_.pop_back();
  if (!empty) Newline();
  out_.push_back('}');
  if (stack_.empty()) out_.push_back('\n');
  return *this;
}

JsonWriter& JsonWriter::BeginArray() {
  BeforeValue();
  out_.push_back('[');
  stack_.push_back({false, 0});
  return *this;
}

JsonWriter& JsonWriter::EndArray() {
  MIMIC_CHECK(!stack_.empty() && !stack_.back().is_object);
  const bool empty = stack_.back().count == 0;
  stack_.pop_back();
  if (!empty) Newline();
  out_.push_back(']');
  return *this;
}

JsonWriter& JsonWriter::String(std::string_view v) {
  BeforeValue();
  AppendJsonString(out_, v);
  return *this;
}

JsonWriter& JsonWriter::Int(int64_t v) {
  BeforeValue();
  out_ += std::to_string(v);
  return *this;
}

JsonWriter& JsonWriter::Double(double v) {
  if (!std::isfinite(v)) return Null();
  BeforeValue();
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.10g", v);
  out_ += buf;
  return *this;
}

JsonWriter& JsonWriter::Bool(bool v) {
  BeforeValue();
  out_ += v ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::Null() {
  BeforeValue();
  out_ += "null";
  return *this;
}

}  // namespace mimic
