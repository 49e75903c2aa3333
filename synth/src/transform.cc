#include "mimic/synth/transform.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "mimic/eg/op_class.h"
#include "mimic/eg/workload.h"

namespace mimic::synth {
namespace {

void Record(proto::Workload& w, const std::string& name, std::map<std::string, std::string> params,
            const std::string& summary) {
  proto::Transformation& t = *w.add_transformations();
  t.set_name(name);
  for (auto& [k, v] : params) (*t.mutable_params())[k] = v;
  t.set_summary(summary);
}

// A copy of `w` without ops and segments, for a transformation to refill.
proto::Workload Shell(const proto::Workload& w) {
  proto::Workload out = w;
  out.clear_ops();
  out.clear_segments();
  return out;
}

// Marks `root` and all its descendants.
void MarkSubtree(const eg::OpTree& tree, int root, std::vector<char>& marked) {
  std::vector<int> stack = {root};
  while (!stack.empty()) {
    const int i = stack.back();
    stack.pop_back();
    if (marked[i]) continue;
    marked[i] = 1;
    for (int c : tree.Children(i)) stack.push_back(c);
  }
}

bool GlobMatch(std::string_view pattern, std::string_view text) {
  size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p, ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

// The declared type of each argument of a schema string ("aten::to(Tensor self, ScalarType
// dtype, ...) -> Tensor" -> {"Tensor", "ScalarType", ...}).
std::vector<std::string> ArgumentTypes(const std::string& schema) {
  std::vector<std::string> types;
  const size_t open = schema.find('(');
  if (open == std::string::npos) return types;
  int depth = 0;
  size_t start = open + 1;
  for (size_t i = open + 1; i < schema.size(); ++i) {
    const char c = schema[i];
    if (c == '(' || c == '[') ++depth;
    if ((c == ')' || c == ']') && depth-- == 0) {
      if (i > start) types.push_back(schema.substr(start, i - start));
      break;
    }
    if (c == ',' && depth == 0) {
      types.push_back(schema.substr(start, i - start));
      start = i + 1;
    }
  }
  for (std::string& t : types) {
    t.erase(0, t.find_first_not_of(' '));
    t = t.substr(0, t.find(' '));
  }
  types.erase(std::remove(types.begin(), types.end(), "*"), types.end());
  return types;
}

struct FloatType {
  proto::DType dtype;
  int64_t scalar_type;  // c10::ScalarType code, as traces record dtype arguments
  int64_t itemsize;
  const char* type_name;
  const char* short_name;
  const char* torch_name;
};
constexpr FloatType kFloatTypes[] = {
    {proto::FLOAT32, 6, 4, "Tensor(float)", "fp32", "float32"},
    {proto::FLOAT16, 5, 2, "Tensor(c10::Half)", "fp16", "float16"},
    {proto::BFLOAT16, 15, 2, "Tensor(c10::BFloat16)", "bf16", "bfloat16"},
    {proto::FLOAT64, 7, 8, "Tensor(double)", "fp64", "float64"},
};

const FloatType* FindFloat(proto::DType d) {
  for (const FloatType& f : kFloatTypes)
    if (f.dtype == d) return &f;
  return nullptr;
}

int32_t InternType(proto::Workload& w, const std::string& name) {
  for (int i = 0; i < w.types_size(); ++i)
    if (w.types(i) == name) return i;
  w.add_types(name);
  return w.types_size() - 1;
}

}  // namespace

bool ParseFloatDType(const std::string& name, proto::DType* out) {
  for (const FloatType& f : kFloatTypes) {
    if (f.dtype == proto::FLOAT64) continue;
    if (name == f.short_name || name == f.torch_name) {
      *out = f.dtype;
      return true;
    }
  }
  return false;
}

Result<proto::Workload> Select(const proto::Workload& w, const SelectSpec& spec) {
  const proto::Segment* chosen = nullptr;
  for (const proto::Segment& s : w.segments()) {
    if (!spec.label.empty()) {
      const std::string label = spec.label.rfind("## ", 0) == 0 ? spec.label : "## " + spec.label + " ##";
      if (s.kind() == proto::Segment::LABEL && s.name() == label) chosen = &s;
    } else if (s.kind() == proto::Segment::ITERATION && (spec.iteration < 0 || s.step() == spec.iteration)) {
      chosen = &s;
    }
    if (chosen) break;
  }
  if (!chosen)
    return Status::InvalidInput(!spec.label.empty() ? "--label \"" + spec.label + "\": no such label"
                                : spec.iteration >= 0 ? "--iteration " + std::to_string(spec.iteration) + ": no such ProfilerStep"
                                                      : "the workload has no ProfilerStep iteration to select");
  const eg::OpTree tree(w);
  std::vector<char> keep(w.ops_size(), 0);
  MarkSubtree(tree, tree.IndexOf(chosen->op_id()), keep);
  proto::Workload out = Shell(w);
  for (int i = 0; i < w.ops_size(); ++i)
    if (keep[i]) *out.add_ops() = w.ops(i);
  for (const proto::Segment& s : w.segments())
    if (keep[tree.IndexOf(s.op_id())]) *out.add_segments() = s;
  // The measured originals were per whole step; a label range has no such figure.
  if (chosen->kind() == proto::Segment::LABEL) out.clear_original();
  Record(out, "select", {{"segment", chosen->name()}},
         "kept " + std::to_string(out.ops_size()) + " of " + std::to_string(w.ops_size()) + " ops");
  return out;
}

Result<proto::Workload> Filter(const proto::Workload& w, const std::string& pattern) {
  eg::OpClass wanted;
  const bool by_class = eg::ParseOpClass(pattern, &wanted);
  const eg::OpTree tree(w);
  std::vector<char> drop(w.ops_size(), 0);
  int64_t kept = 0, dropped = 0;
  for (int i : eg::ReplayableOps(w, tree, -1, /*include_compiled=*/true)) {
    const std::string& name = w.ops(i).name();
    const bool match = by_class ? eg::ClassOf(name) == wanted
                                : GlobMatch(pattern, name) || GlobMatch(pattern + ".*", name);
    if (match) {
      ++kept;
    } else {
      ++dropped;
      MarkSubtree(tree, i, drop);
    }
  }
  if (kept == 0) return Status::InvalidInput("--filter \"" + pattern + "\": no top-level op matches");
  proto::Workload out = Shell(w);
  for (int i = 0; i < w.ops_size(); ++i)
    if (!drop[i]) *out.add_ops() = w.ops(i);
  for (const proto::Segment& s : w.segments()) *out.add_segments() = s;
  out.clear_original();  // the original's step time covers the ops filtered away
  Record(out, "filter", {{"pattern", pattern}},
         "kept " + std::to_string(kept) + " top-level ops, dropped " + std::to_string(dropped));
  return out;
}

Result<proto::Workload> ChangeDtype(const proto::Workload& w, proto::DType dtype) {
  const FloatType* target = FindFloat(dtype);
  if (!target || dtype == proto::FLOAT64) return Status::InvalidInput("--dtype: only bf16, fp16 or fp32");
  proto::Workload out = w;
  const int32_t type_index = InternType(out, target->type_name);
  int64_t tensors = 0, args = 0;
  for (proto::Tensor& t : *out.mutable_tensors()) {
    if (!FindFloat(t.dtype()) || t.dtype() == dtype) continue;
    t.set_dtype(dtype);
    t.set_itemsize(target->itemsize);
    t.set_type(type_index);
    ++tensors;
  }
  // Arguments of type ScalarType that name a floating type follow (aten::to(dtype=...), ...).
  for (proto::Op& op : *out.mutable_ops()) {
    if (op.schema() < 0) continue;
    const std::vector<std::string> types = ArgumentTypes(out.schemas(op.schema()));
    for (int i = 0; i < op.inputs_size() && i < static_cast<int>(types.size()); ++i) {
      if (types[i].rfind("ScalarType", 0) != 0) continue;
      proto::Value& v = *op.mutable_inputs(i);
      if (v.kind_case() != proto::Value::kIntValue) continue;
      for (const FloatType& f : kFloatTypes) {
        if (f.scalar_type == v.int_value() && f.scalar_type != target->scalar_type) {
          v.set_int_value(target->scalar_type);
          ++args;
          break;
        }
      }
    }
  }
  out.clear_original();  // the original ran in its own dtypes
  Record(out, "dtype", {{"dtype", target->short_name}},
         std::to_string(tensors) + " tensor views and " + std::to_string(args) + " dtype arguments changed");
  return out;
}

Result<proto::Workload> Repeat(const proto::Workload& w, int k) {
  if (k < 1) return Status::InvalidInput("--repeat must be at least 1");
  int iterations = 0;
  const proto::Segment* step = nullptr;
  for (const proto::Segment& s : w.segments())
    if (s.kind() == proto::Segment::ITERATION) ++iterations, step = &s;
  if (iterations > 1)
    return Status::InvalidInput("--repeat needs a workload of one iteration (select one with --iteration)");
  const eg::OpTree tree(w);
  int64_t max_id = 0;
  for (const proto::Op& op : w.ops()) max_id = std::max(max_id, op.id());
  const int64_t wrapper_id = max_id + 1;
  const int64_t span = max_id + 2;
  proto::Workload out = Shell(w);
  proto::Op& wrapper = *out.add_ops();
  wrapper.set_id(wrapper_id);
  wrapper.set_schema(-1);
  wrapper.set_name(step ? step->name() : "ProfilerStep#0");
  if (!w.ops().empty()) wrapper.set_thread(w.ops(0).thread());
  for (int c = 0; c < k; ++c) {
    const int64_t offset = span * (c + 1);
    for (int i = 0; i < w.ops_size(); ++i) {
      // The old iteration op itself is replaced by the wrapper: its children hang from it.
      if (step && w.ops(i).id() == step->op_id()) continue;
      proto::Op& op = *out.add_ops();
      op = w.ops(i);
      op.set_id(op.id() + offset);
      const int parent = tree.Parent(i);
      const bool under_step = parent >= 0 && step && w.ops(parent).id() == step->op_id();
      op.set_parent(parent < 0 || under_step ? wrapper_id : w.ops(parent).id() + offset);
    }
  }
  proto::Segment& seg = *out.add_segments();
  seg.set_kind(proto::Segment::ITERATION);
  seg.set_name(wrapper.name());
  seg.set_op_id(wrapper_id);
  seg.set_step(step ? step->step() : 0);
  // The original's figure is per step; k steps take k times as long.
  std::vector<double> times(w.original().iteration_ms().begin(), w.original().iteration_ms().end());
  out.mutable_original()->clear_iteration_ms();
  for (double ms : times) out.mutable_original()->add_iteration_ms(ms * k);
  if (!times.empty())
    out.mutable_original()->set_source(w.original().source() + ", times " + std::to_string(k) + " (repeat)");
  Record(out, "repeat", {{"k", std::to_string(k)}},
         std::to_string(k) + " copies of " + std::to_string(w.ops_size() - (step ? 1 : 0)) + " ops in one iteration");
  return out;
}

}  // namespace mimic::synth
