#include "mimic/eg/value_profile.h"

#include <simdjson.h>

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include "mimic/base/file.h"
#include "mimic/eg/workload.h"

namespace mimic::eg {
namespace {

struct ProfiledInput {
  std::string op;
  int64_t call = 0;
  proto::InputValues values;
  std::optional<std::vector<int64_t>> shape;  // as the dispatcher saw the tensor
};

struct Profile {
  std::map<std::string, int64_t, std::less<>> calls;  // by op name
  std::vector<ProfiledInput> inputs;
};

Status ReadShare(const std::string& where, simdjson::dom::object o, const char* key, double* out) {
  if (o[key].get(*out) != simdjson::SUCCESS || !(*out >= 0 && *out <= 1))
    return Status::InvalidInput(where + "." + key + " must be a number in [0, 1]");
  return Status::Ok();
}

Result<ProfiledInput> ParseInput(const std::string& where, simdjson::dom::element e) {
  simdjson::dom::object o;
  if (e.get(o) != simdjson::SUCCESS) return Status::InvalidInput(where + " is not an object");
  ProfiledInput p;
  std::string_view op;
  int64_t input = -1;
  if (o["op"].get(op) != simdjson::SUCCESS)
    return Status::InvalidInput(where + ".op must be a string");
  if (o["call"].get(p.call) != simdjson::SUCCESS || p.call < 0)
    return Status::InvalidInput(where + ".call must be an integer >= 0");
  if (o["input"].get(input) != simdjson::SUCCESS || input < 0 || input > INT32_MAX)
    return Status::InvalidInput(where + ".input must be an integer >= 0");
  p.op = std::string(op);
  p.values.set_input(static_cast<int32_t>(input));
  double zeros, zero_rows, subnormals;
  MIMIC_RETURN_IF_ERROR(ReadShare(where, o, "zeros", &zeros));
  MIMIC_RETURN_IF_ERROR(ReadShare(where, o, "zero_rows", &zero_rows));
  MIMIC_RETURN_IF_ERROR(ReadShare(where, o, "subnormals", &subnormals));
  if (zero_rows > zeros || zeros + subnormals > 1 + 1e-9)
    return Status::InvalidInput(where + ": zero_rows above zeros, or zeros and subnormals above 1");
  p.values.set_zeros(zeros);
  p.values.set_zero_rows(zero_rows);
  p.values.set_subnormals(subnormals);
  if (simdjson::dom::array shape; o["shape"].get(shape) == simdjson::SUCCESS) {
    p.shape.emplace();
    for (simdjson::dom::element d : shape) {
      int64_t n;
      if (d.get(n) != simdjson::SUCCESS || n < 0)
        return Status::InvalidInput(where + ".shape must hold integers >= 0");
      p.shape->push_back(n);
    }
  }
  return p;
}

Result<Profile> ParseProfile(const std::string& path, std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.parse(json.data(), json.size()).get(doc))
    return Status::InvalidInput(path + ": " + simdjson::error_message(err));
  int64_t format = 0;
  if (doc["format"].get(format) != simdjson::SUCCESS || format != 1)
    return Status::InvalidInput(path + ": \"format\" must be 1");
  simdjson::dom::object calls;
  simdjson::dom::array inputs;
  if (doc["calls"].get(calls) != simdjson::SUCCESS)
    return Status::InvalidInput(path + ": no \"calls\" object");
  if (doc["inputs"].get(inputs) != simdjson::SUCCESS)
    return Status::InvalidInput(path + ": no \"inputs\" list");
  Profile p;
  for (auto [name, count] : calls) {
    int64_t n;
    if (count.get(n) != simdjson::SUCCESS || n < 0)
      return Status::InvalidInput(path + ": calls." + std::string(name) +
                                  " must be an integer >= 0");
    p.calls.emplace(std::string(name), n);
  }
  size_t i = 0;
  for (simdjson::dom::element e : inputs) {
    const std::string where = path + ": inputs[" + std::to_string(i++) + "]";
    MIMIC_ASSIGN_OR_RETURN(ProfiledInput in, ParseInput(where, e));
    auto count = p.calls.find(in.op);
    if (count == p.calls.end())
      return Status::InvalidInput(where + ": " + in.op + " is not in \"calls\"");
    if (in.call >= count->second)
      return Status::InvalidInput(where + ": call " + std::to_string(in.call) + " of " + in.op +
                                  " is beyond the calls counted");
    p.inputs.push_back(std::move(in));
  }
  return p;
}

// The ops of segment `s` by name, each name's in id order.
std::map<std::string, std::vector<int>, std::less<>> OpsByName(const proto::Workload& w,
                                                               const OpTree& tree,
                                                               const proto::Segment& s) {
  const std::vector<char> member = SegmentMembers(w, tree, tree.IndexOf(s.op_id()));
  std::vector<int> ops;
  for (int i = 0; i < w.ops_size(); ++i)
    if (member[i] && w.ops(i).id() != s.op_id()) ops.push_back(i);
  std::sort(ops.begin(), ops.end(), [&w](int a, int b) { return w.ops(a).id() < w.ops(b).id(); });
  std::map<std::string, std::vector<int>, std::less<>> out;
  for (int i : ops) out[w.ops(i).name()].push_back(i);
  return out;
}

// The position among `op`'s input tensors of the profiled one: its own where the profile gave
// no shape, else the first from there of the shape it saw. The trace also counts undefined
// tensors (an absent weight), which the dispatcher never sees, so the position can only grow;
// -1 when no tensor fits.
int64_t InputOf(const proto::Workload& w, const proto::Op& op, const ProfiledInput& in) {
  const int64_t n = InputTensorCount(op);
  for (int64_t k = in.values.input(); k < n; ++k) {
    const int t = InputTensorByOrdinal(op, k);
    if (t < 0) continue;
    if (!in.shape) return k;
    const auto& shape = w.tensors(t).shape();
    if (std::equal(shape.begin(), shape.end(), in.shape->begin(), in.shape->end())) return k;
  }
  return -1;
}

void Place(const Profile& p, proto::Workload& w) {
  const OpTree tree(w);
  proto::ValueProfile& v = *w.mutable_original()->mutable_values();
  for (const proto::Segment& s : w.segments()) {
    if (s.kind() != proto::Segment::ITERATION || tree.IndexOf(s.op_id()) < 0) continue;
    const auto by_name = OpsByName(w, tree, s);
    for (const ProfiledInput& in : p.inputs) {
      v.set_inputs(v.inputs() + 1);
      auto ops = by_name.find(in.op);
      if (ops == by_name.end() || static_cast<int64_t>(ops->second.size()) != p.calls.at(in.op))
        continue;
      proto::Op& op = *w.mutable_ops(ops->second[in.call]);
      const int64_t input = InputOf(w, op, in);
      if (input < 0) continue;
      proto::InputValues& placed = *op.add_input_values();
      placed = in.values;
      placed.set_input(static_cast<int32_t>(input));
      v.set_inputs_placed(v.inputs_placed() + 1);
    }
  }
}

}  // namespace

Status ApplyValueProfile(const std::string& path, std::string_view json, proto::Workload& w) {
  for (proto::Op& op : *w.mutable_ops()) op.clear_input_values();
  w.mutable_original()->clear_values();
  MIMIC_ASSIGN_OR_RETURN(const Profile p, ParseProfile(path, json));
  w.mutable_original()->mutable_values()->set_source(path.substr(path.find_last_of('/') + 1));
  Place(p, w);
  return Status::Ok();
}

Status ApplyValueProfile(const std::string& path, proto::Workload& w) {
  MIMIC_ASSIGN_OR_RETURN(FileContents file, ReadFile(path));
  return ApplyValueProfile(path, file.bytes.view(), w);
}

std::string DescribeValueProfile(const proto::Workload& w) {
  const proto::ValueProfile& v = w.original().values();
  if (v.inputs() == 0 && v.source().starts_with("not used")) return v.source();
  return v.source() + ", " + std::to_string(v.inputs_placed()) + " of " +
         std::to_string(v.inputs()) + " inputs placed";
}

}  // namespace mimic::eg
