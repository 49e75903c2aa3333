// The execution trace reader walks its input through a sliding window (eg/src/json_scan.cc):
// whatever sizes the reads come in, and wherever a string, an escape or a bracket falls, the
// workload is the one a single read gives.
#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "mimic/base/file.h"
#include "mimic/eg/execution_trace.h"
#include "testing.h"

namespace mimic::eg {
namespace {

// Hands out `text` in reads of 1..max_chunk bytes (pseudo-random, fixed seed).
class ChunkedStream : public InputStream {
 public:
  ChunkedStream(std::string text, size_t max_chunk)
      : text_(std::move(text)), max_chunk_(max_chunk) {}
  Result<size_t> Read(char* dst, size_t n) override {
    std::uniform_int_distribution<size_t> size(1, max_chunk_);
    const size_t k = std::min({n, size(rng_), text_.size() - pos_});
    std::memcpy(dst, text_.data() + pos_, k);
    pos_ += k;
    bytes_read_ += k;
    return k;
  }
  bool compressed() const override { return false; }

 private:
  std::string text_;
  size_t max_chunk_;
  size_t pos_ = 0;
  std::mt19937 rng_{42};
};

std::string Serialized(const Result<proto::Workload>& w) {
  EXPECT_THAT(w, IsOk());
  return w.ok() ? w->SerializeAsString() : std::string();
}

TEST(ExecutionTraceStreaming, ShortReadsGiveTheWorkloadOfOneRead) {
  const std::string shared = mimic::testing::SharedTraces();
  const std::string data = mimic::testing::SourceDir() + "/tests/data/";
  for (const std::string& path : {shared + "/param-linear/linear_et.json.gz",
                                  shared + "/hta-simple-add/simple_add_et.json.gz",
                                  shared + "/chakra-allgather/allgather_1.0.2_et.json.gz",
                                  shared + "/param-pt2/pt2_et.json.gz", data + "lstm.et.json.gz",
                                  data + "foreach_optimizers.et.json.gz"}) {
    SCOPED_TRACE(path);
    if (!mimic::testing::Exists(path)) continue;
    auto file = ReadFile(path);
    ASSERT_THAT(file, IsOk());
    const std::string whole = Serialized(ParseExecutionTrace(path, file->bytes.view()));
    ASSERT_FALSE(whole.empty());
    for (size_t max_chunk : {1, 7, 300}) {
      if (max_chunk == 1 && file->bytes.size() > 100000) continue;  // quadratic rescans
      ChunkedStream in(std::string(file->bytes.view()), max_chunk);
      EXPECT_EQ(Serialized(ParseExecutionTrace(path, in)), whole) << "reads of up to " << max_chunk;
    }
  }
}

// Node i's name, after i bytes of padding, holds an escaped quote followed by unbalanced
// brackets, and ends in an escaped backslash; over 130 nodes each falls at every offset of a
// 64-byte block. A scanner that misses an escape ends the string early or late.
std::string TraceWithAwkwardNames(std::vector<std::string>* names) {
  std::string json = R"({"schema": "1.1.1-chakra.0.0.4", "nodes": [)";
  for (int i = 0; i < 130; ++i) {
    const std::string pad(static_cast<size_t>(i), 'x');
    json +=
        (i ? ", " : "") + std::string(R"({"id": )") + std::to_string(i + 1) + R"(, "name": ")" +
        pad +
        R"(q\"]}[\u00e9{\\", "ctrl_deps": 0, "inputs": {"values": [], "shapes": [], "types": []}, )"
        R"("outputs": {"values": [], "shapes": [], "types": []}, "attrs": []})";
    names->push_back(pad + "q\"]}[\xc3\xa9{\\");
  }
  return json + "]}";
}

TEST(ExecutionTraceStreaming, EscapesAndBracketsInStringsAtEveryOffset) {
  std::vector<std::string> names;
  const std::string json = TraceWithAwkwardNames(&names);
  for (size_t max_chunk : {size_t{0}, size_t{5}, size_t{70}}) {
    SCOPED_TRACE(max_chunk);
    ChunkedStream chunked(json, max_chunk ? max_chunk : json.size());
    auto w = ParseExecutionTrace("awkward.json", chunked);
    ASSERT_THAT(w, IsOk());
    ASSERT_EQ(w->ops_size(), 130);
    for (int i = 0; i < 130; ++i) EXPECT_EQ(w->ops(i).name(), names[static_cast<size_t>(i)]);
  }
}

TEST(ExecutionTraceStreaming, UnterminatedTokensAreReportedWhereTheyOpen) {
  struct Case {
    std::string json, error;
  };
  const Case cases[] = {
      {R"({"schema": "1.0.1", "nodes": [{"id": 1, "name": "ab[c)", ":byte 48: unterminated string"},
      {R"({"schema": "1.0.1", "nodes": [{"id": 1, "name": "a\\"}, {"id": 2, "name": "b\"}]})",
       ":byte 74: unterminated string"},
      {R"({"schema": "1.0.1", "nodes": [{"id": 1, "name": "abc", "x": [1, [2)",
       ":byte 30: unterminated array or object"},
  };
  for (const Case& c : cases) {
    for (size_t max_chunk : {size_t{3}, c.json.size()}) {
      ChunkedStream in(c.json, max_chunk);
      auto w = ParseExecutionTrace("bad.json", in);
      ASSERT_FALSE(w.ok()) << c.json;
      EXPECT_THAT(w.status().ToString(), ::testing::HasSubstr("bad.json" + c.error)) << c.json;
    }
  }
}

}  // namespace
}  // namespace mimic::eg
