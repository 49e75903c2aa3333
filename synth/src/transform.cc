#include "mimic/synth/transform.h"

#include <simdjson.h>

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "mimic/base/file.h"
#include "mimic/eg/collective.h"
#include "mimic/eg/op_class.h"
#include "mimic/eg/schema_args.h"
#include "mimic/eg/workload.h"
#include "mimic/ops/dispatch.h"

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

// The original's per-step counts and times other than its step times, times `k` (k steps in
// one iteration): the page faults the model and the replay's heap follow, and the system
// metrics but its utilisation and peak resident set, which are rates and peaks.
void ScalePerStepFigures(double k, proto::OriginalRun& o) {
  if (o.has_page_faults_per_iteration())
    o.set_page_faults_per_iteration(o.page_faults_per_iteration() * k);
  if (!o.has_system()) return;
  proto::SystemMetrics& m = *o.mutable_system();
  m.set_cpu_user_ms(m.cpu_user_ms() * k), m.set_cpu_sys_ms(m.cpu_sys_ms() * k);
  m.set_minor_faults(m.minor_faults() * k), m.set_major_faults(m.major_faults() * k);
  m.set_voluntary_switches(m.voluntary_switches() * k);
  m.set_involuntary_switches(m.involuntary_switches() * k);
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

struct SubstitutionRule {
  std::string match;
  std::string action;  // "delay", "drop" or "replace"
  double delay_us = -1;
  // replace: the ATen operator's schema, which of the op's inputs fill its leading arguments,
  // literal values for the arguments after those (by name, in order), and which of the op's
  // outputs its results stand for.
  std::string with;
  std::vector<int> inputs;
  std::vector<std::pair<std::string, proto::Value>> args;
  std::vector<int> outputs;
};

// A literal argument of a replace rule: a number, a bool, a string or a list of integers.
Result<proto::Value> LiteralValue(simdjson::dom::element e, const std::string& where) {
  proto::Value v;
  int64_t i;
  double d;
  bool b;
  std::string_view s;
  simdjson::dom::array a;
  if (e.get(i) == simdjson::SUCCESS) {
    v.set_int_value(i);
  } else if (e.get(d) == simdjson::SUCCESS) {
    v.set_double_value(d);
  } else if (e.get(b) == simdjson::SUCCESS) {
    v.set_bool_value(b);
  } else if (e.get(s) == simdjson::SUCCESS) {
    v.set_string_value(std::string(s));
  } else if (e.get(a) == simdjson::SUCCESS) {
    proto::ValueList& list = *v.mutable_list();
    for (simdjson::dom::element item : a) {
      if (item.get(i) != simdjson::SUCCESS) return Status::InvalidInput(where + ": lists must hold integers");
      list.add_items()->set_int_value(i);
    }
  } else {
    return Status::InvalidInput(where + ": expected a number, bool, string or list of integers");
  }
  return v;
}

Result<std::vector<int>> IndexList(simdjson::dom::element e, const std::string& where) {
  simdjson::dom::array a;
  if (e.get(a) != simdjson::SUCCESS) return Status::InvalidInput(where + " must be a list of indices");
  std::vector<int> out;
  for (simdjson::dom::element item : a) {
    int64_t k;
    if (item.get(k) != simdjson::SUCCESS || k < 0 || k > 1024)
      return Status::InvalidInput(where + " must hold indices >= 0");
    out.push_back(static_cast<int>(k));
  }
  return out;
}

// Reads and checks a replace rule's fields: `with` must be an operator of this LibTorch, and
// the inputs plus literal args must fill its arguments in order.
Status ReadReplacement(simdjson::dom::element e, const std::string& where, SubstitutionRule& r) {
  std::string_view s;
  if (e["with"].get(s) != simdjson::SUCCESS || s.empty())
    return Status::InvalidInput(where + ".with: the replacing operator's schema is missing");
  r.with = std::string(s);
  const Result<c10::OperatorHandle> handle = ops::ResolveOperator(r.with);
  if (!handle.ok()) return Status::InvalidInput(where + ".with: " + handle.status().message());
  const std::vector<eg::SchemaArg> schema_args = eg::ParseSchemaArgs(r.with);
  simdjson::dom::element field;
  if (e["inputs"].get(field) == simdjson::SUCCESS) {
    MIMIC_ASSIGN_OR_RETURN(r.inputs, IndexList(field, where + ".inputs"));
  }
  if (e["outputs"].get(field) == simdjson::SUCCESS) {
    MIMIC_ASSIGN_OR_RETURN(r.outputs, IndexList(field, where + ".outputs"));
  }
  simdjson::dom::object args;
  if (e["args"].get(args) == simdjson::SUCCESS) {
    for (auto [key, value] : args) {
      MIMIC_ASSIGN_OR_RETURN(proto::Value v, LiteralValue(value, where + ".args." + std::string(key)));
      r.args.emplace_back(std::string(key), std::move(v));
    }
  }
  // Literal args continue where the inputs end, in the schema's order.
  size_t next = r.inputs.size();
  for (const auto& [name, value] : r.args) {
    if (next >= schema_args.size() || schema_args[next].name != name)
      return Status::InvalidInput(where + ".args." + name + ": expected " +
                                  (next < schema_args.size() ? "\"" + schema_args[next].name + "\"" : "no more arguments") +
                                  " (args fill the arguments after the inputs, in the schema's order)");
    ++next;
  }
  if (r.inputs.size() > schema_args.size())
    return Status::InvalidInput(where + ".inputs: " + std::to_string(r.inputs.size()) + " inputs for " +
                                std::to_string(schema_args.size()) + " arguments of " + r.with);
  return Status::Ok();
}
struct SubstitutionTable {
  std::vector<SubstitutionRule> rules;
};

// Reads docs/substitution.md's format: {"substitutions": [{"match", "action", "delay_us"?}]}.
Result<SubstitutionTable> ReadSubstitutionTable(const std::string& path) {
  MIMIC_ASSIGN_OR_RETURN(FileContents file, ReadFile(path));
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.parse(file.bytes.data(), file.bytes.size(), false).get(doc))
    return Status::InvalidInput(path + ": " + simdjson::error_message(err));
  simdjson::dom::array rules;
  if (doc["substitutions"].get(rules) != simdjson::SUCCESS)
    return Status::InvalidInput(path + ": no \"substitutions\" list");
  SubstitutionTable table;
  size_t i = 0;
  for (simdjson::dom::element e : rules) {
    const std::string where = path + ": substitutions[" + std::to_string(i++) + "]";
    SubstitutionRule r;
    std::string_view s;
    if (e["match"].get(s) != simdjson::SUCCESS || s.empty()) return Status::InvalidInput(where + ".match is missing");
    r.match = std::string(s);
    if (e["action"].get(s) != simdjson::SUCCESS || (s != "delay" && s != "drop" && s != "replace"))
      return Status::InvalidInput(where + ".action must be \"delay\", \"drop\" or \"replace\"");
    r.action = std::string(s);
    if (r.action == "replace") MIMIC_RETURN_IF_ERROR(ReadReplacement(e, where, r));
    double us;
    if (e["delay_us"].get(us) == simdjson::SUCCESS) {
      if (us < 0) return Status::InvalidInput(where + ".delay_us must not be negative");
      r.delay_us = us;
    }
    table.rules.push_back(std::move(r));
  }
  return table;
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
  MIMIC_ASSIGN_OR_RETURN(const proto::Segment* chosen, eg::FindSegment(w, spec.iteration, spec.label));
  if (!chosen) return Status::InvalidInput("the workload has no ProfilerStep iteration to select");
  const eg::OpTree tree(w);
  // The step's ops on every thread (the backward on the autograd thread too), with the thread
  // roots they hang off.
  std::vector<char> keep = eg::SegmentMembers(w, tree, tree.IndexOf(chosen->op_id()));
  for (int i = 0; i < w.ops_size(); ++i)
    for (int p = keep[i] ? tree.Parent(i) : -1; p >= 0 && !keep[p]; p = tree.Parent(p)) keep[p] = 1;
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
  int64_t tensors = 0, dtype_args = 0;
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
    const std::vector<eg::SchemaArg> args = eg::ParseSchemaArgs(out.schemas(op.schema()));
    for (int i = 0; i < op.inputs_size() && i < static_cast<int>(args.size()); ++i) {
      if (args[i].type.rfind("ScalarType", 0) != 0) continue;
      proto::Value& v = *op.mutable_inputs(i);
      if (v.kind_case() != proto::Value::kIntValue) continue;
      for (const FloatType& f : kFloatTypes) {
        if (f.scalar_type == v.int_value() && f.scalar_type != target->scalar_type) {
          v.set_int_value(target->scalar_type);
          ++dtype_args;
          break;
        }
      }
    }
  }
  out.clear_original();  // the original ran in its own dtypes
  Record(out, "dtype", {{"dtype", target->short_name}},
         std::to_string(tensors) + " tensor views and " + std::to_string(dtype_args) + " dtype arguments changed");
  eg::AnnotateCollectives(out);  // sizes, dtypes and op ids changed
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
  // The original's figures are per step; k steps take k times as long, fault k times as often.
  std::vector<double> times(w.original().iteration_ms().begin(), w.original().iteration_ms().end());
  out.mutable_original()->clear_iteration_ms();
  for (double ms : times) out.mutable_original()->add_iteration_ms(ms * k);
  ScalePerStepFigures(k, *out.mutable_original());
  if (!times.empty())
    out.mutable_original()->set_source(w.original().source() + ", times " + std::to_string(k) + " (repeat)");
  Record(out, "repeat", {{"k", std::to_string(k)}},
         std::to_string(k) + " copies of " + std::to_string(w.ops_size() - (step ? 1 : 0)) + " ops in one iteration");
  eg::AnnotateCollectives(out);  // sizes, dtypes and op ids changed
  return out;
}

namespace {

// Renumbers `part` into `out` at the given offsets (ids, tensors, storages, schemas, types).
struct Offsets {
  int64_t op_id, tensor_id, storage_id;
  int32_t schema, type, tensor;
};

void RemapValue(proto::Value& v, const Offsets& o) {
  v.set_type(v.type() + o.type);
  if (v.kind_case() == proto::Value::kTensor && v.tensor() >= 0) v.set_tensor(v.tensor() + o.tensor);
  if (v.kind_case() == proto::Value::kList)
    for (proto::Value& item : *v.mutable_list()->mutable_items()) RemapValue(item, o);
}

}  // namespace

Result<proto::Workload> Compose(const std::vector<proto::Workload>& parts,
                                const std::vector<int>& weights, ComposeMode mode) {
  const bool concurrent = mode == ComposeMode::kConcurrent;
  if (parts.empty()) return Status::InvalidInput("compose: no workloads given");
  if (weights.size() != parts.size())
    return Status::InvalidInput("compose: " + std::to_string(weights.size()) + " weights for " +
                                std::to_string(parts.size()) + " workloads");
  proto::Workload out;
  *out.mutable_format() = parts[0].format();
  out.add_types("");
  proto::Op& wrapper = *out.add_ops();
  wrapper.set_id(1);
  wrapper.set_schema(-1);
  wrapper.set_name("ProfilerStep#0");
  double original_ms = 0, faults = 0;
  bool original_known = true, faults_known = true;
  std::string names;
  Offsets o{2, 0, 0, 0, 0, 0};
  for (size_t p = 0; p < parts.size(); ++p) {
    const proto::Workload& part = parts[p];
    if (weights[p] < 1) return Status::InvalidInput("compose: weights must be at least 1");
    int iterations = 0;
    for (const proto::Segment& s : part.segments()) iterations += s.kind() == proto::Segment::ITERATION;
    if (iterations > 1) return Status::InvalidInput("compose: workload " + std::to_string(p + 1) + " has several iterations (select one)");
    for (const proto::SourceFile& src : part.provenance().sources()) *out.mutable_provenance()->add_sources() = src;
    for (const proto::Transformation& t : part.transformations()) *out.add_transformations() = t;
    o.schema = out.schemas_size();
    o.type = out.types_size();
    o.tensor = out.tensors_size();
    for (const std::string& x : part.schemas()) out.add_schemas(x);
    for (const std::string& x : part.types()) out.add_types(x);
    int64_t max_tensor_id = 0, max_storage_id = 0, max_op_id = 0;
    for (const proto::Tensor& t : part.tensors()) {
      proto::Tensor& c = *out.add_tensors();
      c = t;
      c.set_tensor_id(t.tensor_id() + o.tensor_id);
      c.set_storage_id(t.storage_id() + o.storage_id);
      c.set_type(t.type() + o.type);
      max_tensor_id = std::max(max_tensor_id, t.tensor_id());
      max_storage_id = std::max(max_storage_id, t.storage_id());
    }
    for (const proto::Op& op : part.ops()) max_op_id = std::max(max_op_id, op.id());
    const eg::OpTree tree(part);
    const proto::Segment* step = nullptr;
    for (const proto::Segment& s : part.segments())
      if (s.kind() == proto::Segment::ITERATION) step = &s;
    // A concurrent part hangs under its own tenant range; a sequential one under the iteration.
    int64_t home = wrapper.id();
    if (concurrent) {
      proto::Op& tenant = *out.add_ops();
      tenant.set_id(o.op_id++);
      tenant.set_schema(-1);
      tenant.set_parent(wrapper.id());
      tenant.set_name("## mimic:tenant:" + std::to_string(p) + " ##");
      home = tenant.id();
      proto::Segment& label = *out.add_segments();
      label.set_kind(proto::Segment::LABEL);
      label.set_name(tenant.name());
      label.set_op_id(tenant.id());
    }
    for (int copy = 0; copy < weights[p]; ++copy) {
      for (int i = 0; i < part.ops_size(); ++i) {
        if (step && part.ops(i).id() == step->op_id()) continue;  // the wrapper replaces it
        proto::Op& op = *out.add_ops();
        op = part.ops(i);
        op.set_id(op.id() + o.op_id);
        const int parent = tree.Parent(i);
        const bool under_step = parent >= 0 && step && part.ops(parent).id() == step->op_id();
        op.set_parent(parent < 0 || under_step ? home : part.ops(parent).id() + o.op_id);
        if (op.schema() >= 0) op.set_schema(op.schema() + o.schema);
        for (proto::Value& v : *op.mutable_inputs()) RemapValue(v, o);
        for (proto::Value& v : *op.mutable_outputs()) RemapValue(v, o);
      }
      o.op_id += max_op_id + 1;
    }
    o.tensor_id += max_tensor_id + 1;
    o.storage_id += max_storage_id + 1;
    const auto& times = part.original().iteration_ms();
    if (times.empty()) {
      original_known = false;
    } else {
      std::vector<double> v(times.begin(), times.end());
      std::sort(v.begin(), v.end());
      const double median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
      original_ms += median * weights[p];
    }
    faults_known = faults_known && part.original().has_page_faults_per_iteration();
    faults += part.original().page_faults_per_iteration() * weights[p];
    names += (p ? "+" : "") + std::to_string(weights[p]) + "x" +
             (part.provenance().sources_size() ? part.provenance().sources(0).path() : "workload");
  }
  proto::Segment& seg = *out.add_segments();
  seg.set_kind(proto::Segment::ITERATION);
  seg.set_name(wrapper.name());
  seg.set_op_id(wrapper.id());
  if (original_known && !concurrent) {
    out.mutable_original()->add_iteration_ms(original_ms);
    out.mutable_original()->set_source("weighted sum of the components' original medians");
    if (faults_known) out.mutable_original()->set_page_faults_per_iteration(faults);
  }
  Record(out, "compose", {{"mode", concurrent ? "concurrent" : "seq"}, {"parts", names}},
         std::to_string(parts.size()) + (concurrent ? " workloads as concurrent tenants, " : " workloads in sequence, ") +
             std::to_string(out.ops_size() - 1) + " ops");
  eg::AnnotateCollectives(out);  // sizes, dtypes and op ids changed
  return out;
}

// The ATen op standing in for `op` under rule `r`: the same id, place, thread and recorded
// times; its arguments taken from the op's inputs and the rule's literals, its results standing
// for the op's outputs (so later ops consume them, and the replay checks their shapes).
proto::Op Replacement(proto::Workload& out, const proto::Op& op, const SubstitutionRule& r) {
  proto::Op n;
  n.set_id(op.id());
  n.set_parent(op.parent());
  n.set_thread(op.thread());
  n.set_rf_id(op.rf_id());
  n.set_name(r.with.substr(0, r.with.find('(')));
  int schema = -1;
  for (int k = 0; k < out.schemas_size() && schema < 0; ++k)
    if (out.schemas(k) == r.with) schema = k;
  if (schema < 0) {
    out.add_schemas(r.with);
    schema = out.schemas_size() - 1;
  }
  n.set_schema(schema);
  for (int k : r.inputs) *n.add_inputs() = op.inputs(k);
  for (const auto& [name, value] : r.args) *n.add_inputs() = value;
  if (r.outputs.empty()) {
    *n.mutable_outputs() = op.outputs();
  } else {
    for (int k : r.outputs) *n.add_outputs() = op.outputs(k);
  }
  n.set_has_cpu_span(op.has_cpu_span());
  n.set_cpu_start_us(op.cpu_start_us());
  n.set_cpu_duration_us(op.cpu_duration_us());
  if (op.has_timeline_start_us()) {
    n.set_timeline_start_us(op.timeline_start_us());
    n.set_timeline_duration_us(op.timeline_duration_us());
  }
  *n.mutable_kernels() = op.kernels();
  (*n.mutable_attrs())["replaces"].set_string_value(op.name());
  // The capture's values of the input tensors it keeps, at their places among its own.
  std::vector<int> kept;  // its input tensors, in order
  for (int64_t k = 0; !op.input_values().empty() && k < eg::InputTensorCount(n); ++k)
    kept.push_back(eg::InputTensorByOrdinal(n, k));
  for (const proto::InputValues& v : op.input_values()) {
    const int t = eg::InputTensorByOrdinal(op, v.input());
    const auto at = std::find(kept.begin(), kept.end(), t);
    if (t < 0 || at == kept.end()) continue;
    proto::InputValues& moved = *n.add_input_values();
    moved = v;
    moved.set_input(static_cast<int32_t>(at - kept.begin()));
  }
  return n;
}

Result<proto::Workload> Substitute(const proto::Workload& w, const std::string& table_path) {
  MIMIC_ASSIGN_OR_RETURN(const SubstitutionTable table, ReadSubstitutionTable(table_path));
  const eg::OpTree tree(w);
  std::vector<char> drop(w.ops_size(), 0);
  std::unordered_map<int, double> delay_of;  // op index -> µs
  std::unordered_map<int, const SubstitutionRule*> replace_of;
  std::map<std::string, int64_t> counts;
  for (int i : eg::ReplayableOps(w, tree, -1, /*include_compiled=*/true)) {
    const proto::Op& op = w.ops(i);
    for (const SubstitutionRule& r : table.rules) {
      if (!GlobMatch(r.match, op.name()) && !GlobMatch(r.match + ".*", op.name())) continue;
      ++counts[r.match + " -> " + r.action + (r.action == "replace" ? " " + r.with.substr(0, r.with.find('(')) : "")];
      MarkSubtree(tree, i, drop);
      if (r.action == "replace") {
        for (int k : r.inputs)
          if (k >= op.inputs_size())
            return Status::InvalidInput(table_path + ": rule \"" + r.match + "\": op " + std::to_string(op.id()) + " (" +
                                        op.name() + ") has no input " + std::to_string(k));
        for (int k : r.outputs)
          if (k >= op.outputs_size())
            return Status::InvalidInput(table_path + ": rule \"" + r.match + "\": op " + std::to_string(op.id()) + " (" +
                                        op.name() + ") has no output " + std::to_string(k));
        replace_of[i] = &r;
      }
      if (r.action == "delay") {
        double us = r.delay_us;
        if (us < 0) {
          double kernels = 0;
          std::vector<int> stack = {i};
          while (!stack.empty()) {
            const int j = stack.back();
            stack.pop_back();
            for (const proto::Kernel& k : w.ops(j).kernels()) kernels += k.duration_us();
            for (int c : tree.Children(j)) stack.push_back(c);
          }
          us = kernels > 0 ? kernels : op.has_cpu_span() ? op.cpu_duration_us() : -1;
        }
        if (us < 0)
          return Status::InvalidInput(table_path + ": rule \"" + r.match + "\": op " + std::to_string(op.id()) + " (" +
                                      op.name() + ") has no recorded time (link its Kineto trace, or give delay_us)");
        delay_of[i] = us;
      }
      break;
    }
  }
  if (counts.empty()) return Status::InvalidInput(table_path + ": no rule matches any top-level op");
  proto::Workload out = Shell(w);
  for (int i = 0; i < w.ops_size(); ++i) {
    if (auto it = delay_of.find(i); it != delay_of.end()) {
      proto::Op& d = *out.add_ops();
      d.set_id(w.ops(i).id());
      d.set_parent(w.ops(i).parent());
      d.set_thread(w.ops(i).thread());
      d.set_schema(-1);
      d.set_name(eg::kDelayOp);
      (*d.mutable_attrs())["delay_us"].set_double_value(it->second);
      (*d.mutable_attrs())["replaces"].set_string_value(w.ops(i).name());
      continue;
    }
    if (auto it = replace_of.find(i); it != replace_of.end()) {
      *out.add_ops() = Replacement(out, w.ops(i), *it->second);
      continue;
    }
    if (!drop[i]) *out.add_ops() = w.ops(i);
  }
  for (const proto::Segment& s : w.segments()) *out.add_segments() = s;
  std::string summary;
  for (const auto& [rule, n] : counts) summary += (summary.empty() ? "" : "; ") + rule + ": " + std::to_string(n);
  // A dropped op's time is gone from the replay; the original then ran more than it.
  bool dropped = false;
  for (const SubstitutionRule& r : table.rules) dropped |= r.action == "drop";
  if (dropped) out.clear_original();
  Record(out, "substitute", {{"table", table_path}}, summary);
  return out;
}

Result<proto::Workload> ScaleWorldSize(const proto::Workload& w, int world_size) {
  if (world_size < 1) return Status::InvalidInput("--world-size must be at least 1");
  const int64_t recorded = w.provenance().world_size();
  if (recorded <= 0) return Status::InvalidInput("--world-size: the trace does not say on how many ranks it ran");
  proto::Workload out = w;
  proto::Provenance& prov = *out.mutable_provenance();
  // The world group: recorded with no ranks or all of them.
  std::string world;
  for (proto::ProcessGroup& g : *prov.mutable_process_groups()) {
    if (g.ranks().empty() || g.ranks_size() == recorded) {
      if (world.empty()) world = g.name();
      g.clear_ranks();
      g.set_size(world_size);
      continue;
    }
    for (int64_t r : g.ranks())
      if (r >= world_size)
        return Status::InvalidInput("--world-size " + std::to_string(world_size) + ": process group " + g.name() +
                                    " holds rank " + std::to_string(r));
  }
  prov.set_world_size(world_size);
  int64_t resized = 0;
  for (proto::Op& op : *out.mutable_ops()) {
    if (!eg::IsCommunication(op)) continue;
    proto::Collective& c = *op.mutable_collective();
    if (!(c.process_group().empty() || c.process_group() == world)) continue;
    ++resized;
    c.set_group_size(world_size);
    switch (c.type()) {
      case proto::Collective::ALL_GATHER:
      case proto::Collective::GATHER:
        c.set_out_elems(c.in_elems() * world_size);
        break;
      case proto::Collective::REDUCE_SCATTER:
      case proto::Collective::SCATTER:
        c.set_in_elems(c.out_elems() * world_size);
        break;
      case proto::Collective::ALL_TO_ALL: {
        // Each rank keeps what it sends and receives, split evenly over the new world.
        auto even = [world_size](int64_t total, google::protobuf::RepeatedField<int64_t>* splits) {
          splits->Clear();
          for (int r = 0; r < world_size; ++r) splits->Add(total / world_size + (r < total % world_size ? 1 : 0));
        };
        if (!c.in_split_sizes().empty() || !c.out_split_sizes().empty()) {
          even(c.in_elems(), c.mutable_in_split_sizes());
          even(c.out_elems(), c.mutable_out_split_sizes());
        }
        break;
      }
      default:
        break;  // all-reduce, broadcast, reduce, send/recv, barrier: per-rank sizes unchanged
    }
  }
  Record(out, "world_size", {{"world_size", std::to_string(world_size)}},
         std::to_string(recorded) + " -> " + std::to_string(world_size) + " ranks: " + std::to_string(resized) +
             " collectives on the world group resized; compute per rank unchanged (weak scaling)");
  return out;
}

proto::Workload MakePortable(const proto::Workload& w, std::string_view target) {
  proto::Workload out = w;
  const eg::PortableRewrites done = eg::MakePortable(&out, target);
  *out.add_transformations() = eg::PortableTransformation(done, target);
  return out;
}

}  // namespace mimic::synth
