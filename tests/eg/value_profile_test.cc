#include "mimic/eg/value_profile.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "mimic/eg/workload.h"

namespace mimic::eg {
namespace {

// Iteration steps of the ops `names` each (ids in order, each op under its step's), every op
// reading one tensor of its own.
proto::Workload Steps(int steps, const std::vector<std::string>& names) {
  proto::Workload w;
  int64_t id = 1;
  for (int s = 0; s < steps; ++s) {
    const int64_t step_id = id++;
    proto::Op& step = *w.add_ops();
    step.set_id(step_id), step.set_name("ProfilerStep#" + std::to_string(s)), step.set_schema(-1);
    proto::Segment& seg = *w.add_segments();
    seg.set_kind(proto::Segment::ITERATION), seg.set_op_id(step_id), seg.set_step(s);
    for (const std::string& name : names) {
      proto::Op& o = *w.add_ops();
      o.set_id(id++), o.set_name(name), o.set_schema(-1), o.set_parent(step_id);
      o.add_inputs()->set_tensor(w.tensors_size());
      w.add_tensors()->set_tensor_id(o.id());
    }
  }
  return w;
}

std::string Profile(const std::string& calls, const std::string& inputs) {
  return R"({"format": 1, "calls": {)" + calls + R"(}, "inputs": [)" + inputs + "]}";
}

const std::string kSecondSqrt =
    R"({"op": "aten::sqrt", "call": 1, "input": 0, "zeros": 0.5, "zero_rows": 0.25, "subnormals": 0.125})";

TEST(ValueProfile, PlacesEachInputOnItsCallOfTheName) {
  proto::Workload w = Steps(1, {"aten::sqrt", "aten::mul_", "aten::sqrt"});
  ASSERT_TRUE(
      ApplyValueProfile("v.json", Profile(R"("aten::sqrt": 2, "aten::mul_": 1)", kSecondSqrt), w)
          .ok());
  EXPECT_TRUE(w.ops(1).input_values().empty());
  ASSERT_EQ(w.ops(3).input_values_size(), 1);
  const proto::InputValues& v = w.ops(3).input_values(0);
  EXPECT_EQ(v.input(), 0);
  EXPECT_DOUBLE_EQ(v.zeros(), 0.5);
  EXPECT_DOUBLE_EQ(v.zero_rows(), 0.25);
  EXPECT_DOUBLE_EQ(v.subnormals(), 0.125);
  EXPECT_EQ(DescribeValueProfile(w), "v.json, 1 of 1 inputs placed");
}

TEST(ValueProfile, EachIterationGetsItsOwn) {
  proto::Workload w = Steps(2, {"aten::sqrt", "aten::sqrt"});
  ASSERT_TRUE(ApplyValueProfile("v.json", Profile(R"("aten::sqrt": 2)", kSecondSqrt), w).ok());
  EXPECT_EQ(w.ops(2).input_values_size(), 1);  // the first step's second sqrt
  EXPECT_EQ(w.ops(5).input_values_size(), 1);  // the second step's
  EXPECT_EQ(w.original().values().inputs(), 2);
  EXPECT_EQ(w.original().values().inputs_placed(), 2);
}

// The profile counts what the dispatcher ran; a trace that counts another number of calls of a
// name (ops a kernel ran inside itself) cannot tell which is which.
TEST(ValueProfile, ANameCountedOtherwiseIsNotPlaced) {
  proto::Workload w = Steps(1, {"aten::sqrt", "aten::sqrt"});
  ASSERT_TRUE(ApplyValueProfile("v.json", Profile(R"("aten::sqrt": 3)", kSecondSqrt), w).ok());
  for (const proto::Op& op : w.ops()) EXPECT_TRUE(op.input_values().empty()) << op.id();
  EXPECT_EQ(DescribeValueProfile(w), "v.json, 0 of 1 inputs placed");
}

TEST(ValueProfile, AnInputTheOpLacksIsNotPlaced) {
  proto::Workload w = Steps(1, {"aten::sqrt", "aten::sqrt"});
  const std::string third =
      R"({"op": "aten::sqrt", "call": 0, "input": 2, "zeros": 1, "zero_rows": 1, "subnormals": 0})";
  ASSERT_TRUE(ApplyValueProfile("v.json", Profile(R"("aten::sqrt": 2)", third), w).ok());
  EXPECT_EQ(w.original().values().inputs_placed(), 0);
}

TEST(ValueProfile, AppliedAgainItReplacesThePlacement) {
  proto::Workload w = Steps(1, {"aten::sqrt", "aten::sqrt"});
  const std::string calls = R"("aten::sqrt": 2)";
  ASSERT_TRUE(ApplyValueProfile("a.json", Profile(calls, kSecondSqrt), w).ok());
  ASSERT_TRUE(ApplyValueProfile("b.json", Profile(calls, ""), w).ok());
  EXPECT_TRUE(w.ops(2).input_values().empty());
  EXPECT_EQ(DescribeValueProfile(w), "b.json, 0 of 0 inputs placed");
}

// An op reading a tensor of shape [4], an absent optional tensor (recorded undefined, never
// seen by the dispatcher), a list of two [2, 3] tensors and a [5] one.
proto::Workload WithUndefinedAndList() {
  proto::Workload w = Steps(1, {"aten::foo"});
  auto tensor = [&w](std::vector<int64_t> shape) {
    proto::Tensor& t = *w.add_tensors();
    t.set_tensor_id(w.tensors_size());
    for (int64_t d : shape) t.add_shape(d);
    return w.tensors_size() - 1;
  };
  proto::Op& op = *w.mutable_ops(1);
  op.clear_inputs();
  op.add_inputs()->set_tensor(tensor({4}));
  op.add_inputs()->set_tensor(-1);
  proto::ValueList& list = *op.add_inputs()->mutable_list();
  list.add_items()->set_tensor(tensor({2, 3}));
  list.add_items()->set_tensor(tensor({2, 3}));
  op.add_inputs()->set_tensor(tensor({5}));
  return w;
}

std::string Foo(int input, const std::string& shape) {
  return Profile(R"("aten::foo": 1)", R"({"op": "aten::foo", "call": 0, "input": )" +
                                          std::to_string(input) + shape +
                                          R"(, "zeros": 0.5, "zero_rows": 0, "subnormals": 0})");
}

// The dispatcher's position 3 (the [5] tensor) is the trace's 4: the trace counts the absent
// tensor too. The recorded shape finds it; without one, the next defined tensor stands.
TEST(ValueProfile, TheShapeFindsTheInputPastAnUndefinedTensor) {
  const std::vector<std::tuple<int, std::string, int>> cases = {{3, R"(, "shape": [5])", 4},
                                                                {1, R"(, "shape": [2, 3])", 2},
                                                                {0, R"(, "shape": [4])", 0},
                                                                {1, "", 2},
                                                                {3, R"(, "shape": [6])", -1}};
  for (const auto& [input, shape, placed] : cases) {
    proto::Workload w = WithUndefinedAndList();
    const Status s = ApplyValueProfile("v.json", Foo(input, shape), w);
    ASSERT_TRUE(s.ok()) << s.message();
    if (placed < 0) {
      EXPECT_TRUE(w.ops(1).input_values().empty()) << input << shape;
      continue;
    }
    ASSERT_EQ(w.ops(1).input_values_size(), 1) << input << shape;
    EXPECT_EQ(w.ops(1).input_values(0).input(), placed) << input << shape;
  }
}

TEST(ValueProfile, MalformedFilesNameTheEntry) {
  proto::Workload w = Steps(1, {"aten::sqrt"});
  const std::string calls = R"("aten::sqrt": 1)";
  auto error = [&](const std::string& json) {
    Status s = ApplyValueProfile("v.json", json, w);
    EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
    return s.message();
  };
  EXPECT_TRUE(error("{").starts_with("v.json: ")) << error("{");  // simdjson's reason
  EXPECT_EQ(error(R"({"calls": {}, "inputs": []})"), "v.json: \"format\" must be 1");
  EXPECT_EQ(error(Profile(calls, R"({"op": "aten::sqrt", "call": 0, "input": 0, "zeros": 1.5,
                                     "zero_rows": 0, "subnormals": 0})")),
            "v.json: inputs[0].zeros must be a number in [0, 1]");
  EXPECT_EQ(error(Profile(calls, R"({"op": "aten::sqrt", "call": 1, "input": 0, "zeros": 1,
                                     "zero_rows": 0, "subnormals": 0})")),
            "v.json: inputs[0]: call 1 of aten::sqrt is beyond the calls counted");
  EXPECT_EQ(error(Profile(calls, R"({"op": "aten::sqrt", "call": 0, "input": 0, "zeros": 0.1,
                                     "zero_rows": 0.2, "subnormals": 0})")),
            "v.json: inputs[0]: zero_rows above zeros, or zeros and subnormals above 1");
  EXPECT_EQ(error(Profile(R"("aten::sqrt": -1)", "")),
            "v.json: calls.aten::sqrt must be an integer >= 0");
  EXPECT_EQ(error(R"({"format": 1, "inputs": []})"), "v.json: no \"calls\" object");
  EXPECT_EQ(error(R"({"format": 1, "calls": {}})"), "v.json: no \"inputs\" list");
  EXPECT_EQ(error(Profile(calls, "7")), "v.json: inputs[0] is not an object");
  EXPECT_EQ(error(Profile(calls, R"({"op": 3, "call": 0, "input": 0})")),
            "v.json: inputs[0].op must be a string");
  EXPECT_EQ(error(Profile(calls, R"({"op": "aten::sqrt", "call": 0, "input": -2})")),
            "v.json: inputs[0].input must be an integer >= 0");
  EXPECT_EQ(error(Profile(calls, R"({"op": "aten::log", "call": 0, "input": 0, "zeros": 1,
                                     "zero_rows": 0, "subnormals": 0})")),
            "v.json: inputs[0]: aten::log is not in \"calls\"");
  EXPECT_EQ(error(Profile(calls, R"({"op": "aten::sqrt", "call": 0, "input": 0, "zeros": 1,
                                     "zero_rows": 0, "subnormals": 0, "shape": [-1]})")),
            "v.json: inputs[0].shape must hold integers >= 0");
}

}  // namespace
}  // namespace mimic::eg
