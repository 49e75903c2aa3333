#include "mimic/base/json_writer.h"

#include <cmath>

#include "mimic/base/stats.h"
#include "testing.h"

namespace mimic {
namespace {

TEST(JsonWriter, WritesNestedDocumentsWithEscapes) {
  JsonWriter j;
  j.BeginObject().Key("name").String("a\"b\\c\n").Key("n").Int(-3).Key("list").BeginArray();
  j.Double(1.5).Bool(true).Null().Double(NAN).EndArray();
  j.Key("empty").BeginObject().EndObject();
  j.EndObject();
  EXPECT_EQ(j.str(),
            "{\n  \"name\": \"a\\\"b\\\\c\\n\",\n  \"n\": -3,\n  \"list\": [\n    1.5,\n    true,\n"
            "    null,\n    null\n  ],\n  \"empty\": {}\n}\n");
}

TEST(Stats, PercentilesInterpolateBetweenRanks) {
  const std::vector<double> v = {4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(Median(v), 2.5);
  EXPECT_DOUBLE_EQ(Percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(Percentile(v, 100), 4);
  EXPECT_DOUBLE_EQ(Percentile(v, 10), 1.3);
}

}  // namespace
}  // namespace mimic
