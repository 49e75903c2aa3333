#include "mimic/eg/workload.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "json_scan.h"
#include "mimic/base/file.h"
#include "mimic/base/framed.h"
#include "mimic/eg/collective.h"
#include "mimic/eg/execution_trace.h"
#include "mimic/eg/host_timeline.h"
#include "mimic/eg/kineto.h"
#include "mimic/eg/schema_args.h"

namespace mimic::eg {
namespace {

// A `.mimic` file is the serialized proto::Workload, framed (base/framed.h) with this magic.
constexpr std::string_view kMagic = "MIMICWL\n";

bool StartsWith(const std::string& s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

void AddSource(proto::Workload& w, const char* role, const std::string& path,
               const std::string& sha256, uint64_t json_bytes) {
  proto::SourceFile& s = *w.mutable_provenance()->add_sources();
  s.set_role(role);
  s.set_path(path);
  s.set_sha256(sha256);
  s.set_bytes(json_bytes);
}

// Parent links must form a forest: a cycle would make every tree walk loop.
Status CheckParentLinks(const std::string& path, const proto::Workload& w) {
  const OpTree tree(w);
  std::vector<uint8_t> state(w.ops_size(), 0);  // 0 new, 1 on the current walk, 2 done
  for (int i = 0; i < w.ops_size(); ++i) {
    std::vector<int> walk;
    int j = i;
    while (j >= 0 && state[j] == 0) {
      state[j] = 1;
      walk.push_back(j);
      j = tree.Parent(j);
    }
    if (j >= 0 && state[j] == 1)
      return Status::InvalidInput(path + ":node id " + std::to_string(w.ops(j).id()) +
                                  ": cycle in parent links");
    for (int k : walk) state[k] = 2;
  }
  return Status::Ok();
}

bool ValueIndicesOk(const proto::Workload& w, const proto::Value& v, int depth = 0) {
  if (depth > 64 || v.type() < 0 || v.type() >= std::max(w.types_size(), 1)) return false;
  if (v.kind_case() == proto::Value::kTensor) return v.tensor() >= -1 && v.tensor() < w.tensors_size();
  if (v.kind_case() == proto::Value::kList)
    for (const proto::Value& item : v.list().items())
      if (!ValueIndicesOk(w, item, depth + 1)) return false;
  return true;
}

// A workload file comes from outside too: every index it holds must point into its tables.
Status CheckIndices(const std::string& path, const proto::Workload& w) {
  const OpTree tree(w);
  for (const proto::Segment& seg : w.segments())
    if (tree.IndexOf(seg.op_id()) < 0)
      return Status::InvalidInput(path + ":segment " + seg.name() + ": dangling op id " +
                                  std::to_string(seg.op_id()));
  for (const proto::Tensor& t : w.tensors())
    if (t.type() < 0 || t.type() >= std::max(w.types_size(), 1) || t.numel() < 0 || t.offset() < 0)
      return Status::InvalidInput(path + ":tensor " + std::to_string(t.tensor_id()) + ": invalid entry");
  for (const proto::Op& op : w.ops()) {
    const std::string where = path + ":node id " + std::to_string(op.id());
    if (op.schema() < -1 || op.schema() >= w.schemas_size())
      return Status::InvalidInput(where + ": schema index out of range");
    for (const auto* values : {&op.inputs(), &op.outputs()})
      for (const proto::Value& v : *values)
        if (!ValueIndicesOk(w, v)) return Status::InvalidInput(where + ": dangling tensor or type index");
  }
  return Status::Ok();
}

}  // namespace

OpTree::OpTree(const proto::Workload& workload) : w_(workload) {
  const int n = w_.ops_size();
  index_of_.reserve(n);
  for (int i = 0; i < n; ++i) index_of_.emplace(w_.ops(i).id(), i);
  parent_.assign(n, -1);
  children_.resize(n);
  for (int i = 0; i < n; ++i) {
    const int p = IndexOf(w_.ops(i).parent());
    if (p >= 0 && p != i) {
      parent_[i] = p;
      children_[p].push_back(i);
    }
  }
}

int OpTree::IndexOf(int64_t id) const {
  auto it = index_of_.find(id);
  return it == index_of_.end() ? -1 : it->second;
}

bool OpTree::IsWithin(int index, int ancestor) const {
  for (int j = index, guard = 0; j >= 0 && guard <= static_cast<int>(parent_.size()); j = parent_[j], ++guard)
    if (j == ancestor) return true;
  return false;
}

const std::string& TypeName(const proto::Workload& w, int32_t type_index) {
  static const std::string kNone;
  return type_index >= 0 && type_index < w.types_size() ? w.types(type_index) : kNone;
}

Result<const proto::Segment*> FindSegment(const proto::Workload& w, int64_t iteration, const std::string& label) {
  if (!label.empty()) {
    const std::string name = StartsWith(label, "## ") ? label : "## " + label + " ##";
    for (const proto::Segment& s : w.segments())
      if (s.kind() == proto::Segment::LABEL && s.name() == name) return &s;
    return Status::InvalidInput("--label \"" + label + "\": no such label in the trace");
  }
  const proto::Segment* first = nullptr;
  for (const proto::Segment& s : w.segments()) {
    if (s.kind() != proto::Segment::ITERATION) continue;
    if (iteration >= 0 && s.step() == iteration) return &s;
    if (!first) first = &s;
  }
  if (iteration >= 0)
    return Status::InvalidInput("--iteration " + std::to_string(iteration) + ": no ProfilerStep#" +
                                std::to_string(iteration) + " in the trace");
  return first;
}

bool IsWrapperOp(const proto::Op& op) {
  const std::string& n = op.name();
  return StartsWith(n, "ProfilerStep#") || StartsWith(n, "## ") || StartsWith(n, "[pytorch|profiler|") ||
         StartsWith(n, "profiler::") || StartsWith(n, "record_function") || StartsWith(n, "Optimizer.") ||
         StartsWith(n, "autograd::engine::evaluate_function");
}

bool IsFloatingDType(proto::DType d) {
  return d == proto::FLOAT32 || d == proto::FLOAT64 || d == proto::FLOAT16 || d == proto::BFLOAT16;
}

void ForEachTensor(const proto::Value& v, const std::function<void(int)>& fn) {
  if (v.kind_case() == proto::Value::kTensor && v.tensor() >= 0) fn(v.tensor());
  if (v.kind_case() == proto::Value::kList)
    for (const proto::Value& item : v.list().items()) ForEachTensor(item, fn);
}

bool IsCollectiveOp(const proto::Op& op) {
  const std::string& n = op.name();
  return n == "record_param_comms" || StartsWith(n, "c10d::") || StartsWith(n, "nccl:") ||
         StartsWith(n, "gloo:") || StartsWith(n, "_c10d_functional::") || StartsWith(n, "c10d_functional::");
}

bool IsDelayOp(const proto::Op& op) { return op.name() == kDelayOp; }

bool IsCompiledKernel(const proto::Op& op) {
  return op.schema() < 0 && !op.kernel_backend().empty();
}

bool IsCompiledCode(const proto::Op& op) {
  return IsCompiledKernel(op) || op.name() == "CompiledFunction" ||
         op.name() == "CompiledFunctionBackward";
}

std::vector<char> SegmentMembers(const proto::Workload& w, const OpTree& tree, int segment_op) {
  const int n = w.ops_size();
  std::vector<char> member(n, 0);
  if (segment_op < 0 || segment_op >= n) return member;
  const proto::Op& seg = w.ops(segment_op);
  // Ops are sorted by id, which is start order: the segment ends, in id order, where its own
  // thread starts an op outside it.
  int end = n;
  for (int j = segment_op + 1; j < n; ++j)
    if (w.ops(j).thread() == seg.thread() && !tree.IsWithin(j, segment_op)) {
      end = j;
      break;
    }
  const bool spans = seg.has_cpu_span();
  const double seg_end = seg.cpu_start_us() + seg.cpu_duration_us();
  for (int j = segment_op; j < end; ++j) {
    const proto::Op& op = w.ops(j);
    if (op.thread() == seg.thread()) {
      member[j] = tree.IsWithin(j, segment_op);
    } else {
      const int p = tree.Parent(j);
      member[j] =
          (p >= 0 && member[p]) || !spans || !op.has_cpu_span() || op.cpu_start_us() <= seg_end;
    }
  }
  return member;
}

bool IsKinetoOnly(const proto::Workload& w) { return w.provenance().schema() == kKinetoOnlySchema; }

bool IsOperatorName(std::string_view name) {
  const size_t ns = name.find("::");
  if (ns == 0 || ns == std::string_view::npos || ns + 2 == name.size()) return false;
  auto word = [](std::string_view s, bool dots) {
    for (char c : s)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && !(dots && c == '.'))
        return false;
    return true;
  };
  return word(name.substr(0, ns), false) && word(name.substr(ns + 2), true);
}

std::vector<int> ReplayableOps(const proto::Workload& w, const OpTree& tree, int segment_op,
                               bool include_compiled) {
  const int n = w.ops_size();
  const bool kineto_only = IsKinetoOnly(w);
  auto candidate = [&](int i) {
    const proto::Op& op = w.ops(i);
    if (IsWrapperOp(op)) return false;
    // A Kineto trace alone records no schemas: its operators by name, and the spans that
    // launched kernels themselves (compiled functions, custom autograd nodes).
    if (kineto_only && (IsOperatorName(op.name()) || op.kernels_size() > 0)) return true;
    return op.schema() >= 0 || IsDelayOp(op) || op.has_collective() ||
           (include_compiled && IsCompiledKernel(op));
  };
  const std::vector<char> member = SegmentMembers(w, tree, segment_op);
  std::vector<int> out;
  for (int i = 0; i < n; ++i) {
    if (!candidate(i)) continue;
    bool nested = false;
    for (int p = tree.Parent(i), guard = 0; p >= 0 && guard < n; p = tree.Parent(p), ++guard) {
      // A collective filed under another one is its own (see AnnotateCollectives).
      if (candidate(p) && !(w.ops(i).has_collective() && w.ops(p).has_collective())) {
        nested = true;
        break;
      }
    }
    if (nested) continue;
    if (segment_op >= 0 && !member[i]) continue;
    out.push_back(i);
  }
  return out;
}

Summary Summarize(const proto::Workload& w) {
  Summary s;
  s.ops = w.ops_size();
  std::set<int64_t> threads;
  for (const proto::Op& op : w.ops()) {
    s.ops_with_schema += op.schema() >= 0;
    s.collectives += IsCommunication(op);
    threads.insert(op.thread());
  }
  s.threads = static_cast<int64_t>(threads.size());
  const OpTree tree(w);
  const std::vector<int> replayable = ReplayableOps(w, tree);
  s.replayable_ops = static_cast<int64_t>(replayable.size());
  std::map<int64_t, Summary::Thread> per_thread;
  for (const proto::Op& op : w.ops()) ++per_thread[op.thread()].ops;
  for (int i : replayable) ++per_thread[w.ops(i).thread()].replayable_ops;
  for (auto& [tid, t] : per_thread) {
    t.tid = tid;
    s.per_thread.push_back(t);
  }
  s.tensors = w.tensors_size();
  std::unordered_set<int64_t> storages;
  for (const proto::Tensor& t : w.tensors()) storages.insert(t.storage_id());
  s.storages = static_cast<int64_t>(storages.size());
  for (const proto::Segment& seg : w.segments()) {
    s.iterations += seg.kind() == proto::Segment::ITERATION;
    s.labels += seg.kind() == proto::Segment::LABEL;
  }
  return s;
}

Result<proto::Workload> ParseWorkloadFile(const std::string& path, std::string_view bytes) {
  MIMIC_ASSIGN_OR_RETURN(const std::string_view body, Unframe(path, kMagic, bytes));
  const size_t at = bytes.size() - body.size();
  proto::Workload w;
  if (!w.ParseFromArray(body.data(), static_cast<int>(body.size())))
    return Status::InvalidInput(path + ":byte " + std::to_string(at) +
                                ": corrupt workload (protobuf does not parse)");
  MIMIC_RETURN_IF_ERROR(CheckWorkload(path, w));
  UpgradeWorkload(w);
  return w;
}

void UpgradeWorkload(proto::Workload& w) {
  if (w.format().major() == 1 && w.format().minor() < 1) {
    AnnotateCollectives(w);
    w.mutable_format()->set_minor(kWorkloadFormatMinor);
  }
}

Status CheckWorkload(const std::string& path, const proto::Workload& w) {
  if (w.format().major() > kWorkloadFormatMajor)
    return Status::Unsupported(path + ": workload format " + std::to_string(w.format().major()) + "." +
                               std::to_string(w.format().minor()) + " is newer than this Mimic reads (" +
                               std::to_string(kWorkloadFormatMajor) + ".x)");
  MIMIC_RETURN_IF_ERROR(CheckParentLinks(path, w));
  return CheckIndices(path, w);
}

Status SaveWorkload(const std::string& path, const proto::Workload& workload) {
  std::string body;
  if (!workload.SerializeToString(&body)) return Status::Internal("cannot serialize the workload");
  return WriteFileAtomic(path, Frame(kMagic, body));
}

namespace {

// Normalizes an execution trace (and links a Kineto trace when one is given). Each JSON buffer
// is released as soon as it has been read.
// Where a trace's bytes come from: a file, or memory (the embedded fleet sample).
struct Source {
  std::string name;
  std::string_view memory;  // empty: read the file `name`
  bool present() const { return !name.empty(); }
  Result<std::unique_ptr<InputStream>> Open() const {
    if (!memory.empty()) return InputStream::FromMemory(name, memory);
    return InputStream::Open(name);
  }
  Result<std::string> Sha256() const {
    if (!memory.empty()) return Sha256Hex(memory);
    return Sha256OfFile(name);
  }
};

// True when the source is a .mimic workload file (by its magic bytes).
Result<bool> IsWorkloadFile(const Source& source) {
  MIMIC_ASSIGN_OR_RETURN(std::unique_ptr<InputStream> in, source.Open());
  MIMIC_ASSIGN_OR_RETURN(const std::string head, ReadHead(*in, kMagic.size()));
  return head == kMagic;
}

// Whether a JSON trace is a Kineto trace: its top-level object has "traceEvents" before any
// "nodes". Reads the members ahead of the big array (metadata, kilobytes) from the first
// 256 KiB; anything undecided there is read as an execution trace.
Result<bool> IsKinetoTrace(const Source& source) {
  MIMIC_ASSIGN_OR_RETURN(std::unique_ptr<InputStream> in, source.Open());
  MIMIC_ASSIGN_OR_RETURN(const std::string head, ReadHead(*in, 256 << 10));
  JsonScanner scan(head.data(), head.size(), 0, head.size() < (256 << 10));
  if (!scan.Consume('{')) return false;
  std::string_view key, value;
  while (scan.ReadString(&key)) {
    if (key == "traceEvents") return true;
    if (key == "nodes" || !scan.Consume(':') || !scan.ScanValue(&value) || !scan.Consume(','))
      return false;
  }
  return false;
}

std::string KinetoAloneHint(const std::string& path) {
  return path +
         ":byte 0: not a PyTorch execution trace but a Kineto trace (\"traceEvents\"): give it "
         "with --kineto beside its execution trace (a Kineto trace alone cannot be replayed: it "
         "records no tensors; inspect, predict and compare --no-replay read it alone)";
}

// The workload of a Kineto trace alone.
Result<proto::Workload> BuildFromKinetoAlone(const Source& kineto) {
  MIMIC_ASSIGN_OR_RETURN(std::unique_ptr<InputStream> in, kineto.Open());
  MIMIC_ASSIGN_OR_RETURN(KinetoTrace trace, ParseKinetoTrace(kineto.name, *in, {.inputs = true}));
  MIMIC_ASSIGN_OR_RETURN(proto::Workload w, BuildKinetoWorkload(kineto.name, std::move(trace)));
  w.mutable_format()->set_major(kWorkloadFormatMajor);
  w.mutable_format()->set_minor(kWorkloadFormatMinor);
  w.mutable_provenance()->set_mimic_version(MIMIC_VERSION);
  MIMIC_ASSIGN_OR_RETURN(const std::string sha, kineto.Sha256());
  AddSource(w, "kineto", kineto.name, sha, in->bytes_read());
  MIMIC_RETURN_IF_ERROR(CheckParentLinks(kineto.name, w));
  AnnotateCollectives(w);
  return w;
}

// Normalizes an execution trace, streaming it, and links a Kineto trace when one is given; or
// reads a Kineto trace alone when that is allowed.
Result<proto::Workload> Build(const Source& et, const Source& kineto, bool allow_kineto_only) {
  MIMIC_ASSIGN_OR_RETURN(const bool is_kineto, IsKinetoTrace(et));
  if (is_kineto && !allow_kineto_only) return Status::InvalidInput(KinetoAloneHint(et.name));
  if (is_kineto && kineto.present())
    return Status::InvalidInput(et.name +
                                ":byte 0: a Kineto trace, not an execution trace: "
                                "--kineto links a Kineto trace to an execution trace");
  if (is_kineto) return BuildFromKinetoAlone(et);
  MIMIC_ASSIGN_OR_RETURN(std::unique_ptr<InputStream> in, et.Open());
  MIMIC_ASSIGN_OR_RETURN(proto::Workload w, ParseExecutionTrace(et.name, *in));
  w.mutable_format()->set_major(kWorkloadFormatMajor);
  w.mutable_format()->set_minor(kWorkloadFormatMinor);
  w.mutable_provenance()->set_mimic_version(MIMIC_VERSION);
  MIMIC_ASSIGN_OR_RETURN(const std::string et_sha, et.Sha256());
  AddSource(w, "execution_trace", et.name, et_sha, in->bytes_read());
  MIMIC_RETURN_IF_ERROR(CheckParentLinks(et.name, w));
  if (kineto.present()) {
    MIMIC_ASSIGN_OR_RETURN(std::unique_ptr<InputStream> kin, kineto.Open());
    MIMIC_ASSIGN_OR_RETURN(KinetoTrace trace, ParseKinetoTrace(kineto.name, *kin));
    MIMIC_ASSIGN_OR_RETURN(const std::string kineto_sha, kineto.Sha256());
    AddSource(w, "kineto", kineto.name, kineto_sha, kin->bytes_read());
    MIMIC_RETURN_IF_ERROR(LinkKineto(kineto.name, trace, w));
  }
  AnnotateCollectives(w);
  return w;
}

}  // namespace

Result<proto::Workload> LoadWorkload(const std::string& path, const LoadOptions& options) {
  const Source et{path, {}};
  MIMIC_ASSIGN_OR_RETURN(const bool is_workload, IsWorkloadFile(et));
  if (is_workload) {
    MIMIC_ASSIGN_OR_RETURN(FileContents file, ReadFile(path));
    MIMIC_ASSIGN_OR_RETURN(proto::Workload w, ParseWorkloadFile(path, file.bytes.view()));
    if (IsKinetoOnly(w) && !options.allow_kineto_only)
      return Status::InvalidInput(
          path +
          ":byte 0: a workload read from a Kineto trace alone (it records "
          "no tensors): it cannot be replayed; inspect, predict and compare "
          "--no-replay read it");
    return w;
  }
  MIMIC_ASSIGN_OR_RETURN(proto::Workload w,
                         Build(et, Source{options.kineto_path, {}}, options.allow_kineto_only));
  if (!IsKinetoOnly(w)) MIMIC_RETURN_IF_ERROR(AttachIntegerData(path, w));
  return w;
}

Result<proto::Workload> LoadWorkloadFromMemory(const std::string& et_name, std::string_view et_raw,
                                               const std::string& kineto_name,
                                               std::string_view kineto_raw) {
  if (et_raw.empty()) return Status::InvalidInput(et_name + ":byte 0: empty file");
  return Build(Source{et_name, et_raw},
               kineto_raw.empty() ? Source{} : Source{kineto_name, kineto_raw},
               /*allow_kineto_only=*/false);
}

namespace {

// The op's input tensors (lists included, undefined ones too), and the elements of those whose
// range the capture recorded (tensor_range), apart for those broadcast by a zero stride.
struct InputTensors {
  int64_t count = 0;
  int64_t values = 0;  // the other input values
  int64_t ranged = 0;  // the tensors with a recorded range
  int64_t ranged_elements = 0;
  int64_t ranged_strided_elements = 0;
};

bool Broadcast(const proto::Tensor& t) {
  for (int d = 0; d < t.strides_size() && d < t.shape_size(); ++d)
    if (t.strides(d) == 0 && t.shape(d) > 1) return true;
  return false;
}
// Without `w`, the count alone.
InputTensors InputTensorsOf(const proto::Op& op, const proto::Workload* w) {
  InputTensors in;
  auto add = [&](const proto::Value& v, auto& self) -> void {
    if (v.kind_case() == proto::Value::kTensor) {
      ++in.count;
      if (!w || v.tensor() < 0 || v.tensor() >= w->tensors_size()) return;
      const proto::Tensor& t = w->tensors(v.tensor());
      if (!t.has_range()) return;
      ++in.ranged;
      (Broadcast(t) ? in.ranged_strided_elements : in.ranged_elements) += t.numel();
    } else if (v.kind_case() == proto::Value::kList) {
      for (const proto::Value& item : v.list().items()) self(item, self);
    } else {
      ++in.values;
    }
  };
  for (const proto::Value& v : op.inputs()) add(v, add);
  return in;
}

}  // namespace

int64_t InputTensorCount(const proto::Op& op) { return InputTensorsOf(op, nullptr).count; }
int64_t InputValueCount(const proto::Op& op) { return InputTensorsOf(op, nullptr).values; }

double CaptureCost::BeforeStart(const proto::Op& op, const proto::Workload& w,
                                int64_t saved_bytes) const {
  double us = saved_us_per_mb * static_cast<double>(saved_bytes) / (1024.0 * 1024.0);
  if (input_tensor_us > 0 || input_value_us > 0 || range_tensor_us > 0 || range_us_per_melem > 0 ||
      range_strided_us_per_melem > 0) {
    const InputTensors in = InputTensorsOf(op, &w);
    us += input_tensor_us * static_cast<double>(in.count) +
          input_value_us * static_cast<double>(in.values) +
          range_tensor_us * static_cast<double>(in.ranged) +
          range_us_per_melem * static_cast<double>(in.ranged_elements) / 1e6 +
          range_strided_us_per_melem * static_cast<double>(in.ranged_strided_elements) / 1e6;
  }
  return us;
}

const std::vector<CaptureFigure> kCaptureFigures = {
    {&CaptureCost::boundary_us, "boundary_us", "capture_cost_us", "per event boundary"},
    {&CaptureCost::input_tensor_us, "input_tensor_us", "capture_input_tensor_us",
     "per input tensor"},
    {&CaptureCost::input_value_us, "input_value_us", "capture_input_value_us",
     "per other input value"},
    {&CaptureCost::range_tensor_us, "range_tensor_us", "capture_range_tensor_us",
     "per input tensor ranged"},
    {&CaptureCost::range_us_per_melem, "range_us_per_melem", "capture_range_us_per_melem",
     "per million integer elements ranged"},
    {&CaptureCost::range_strided_us_per_melem, "range_strided_us_per_melem",
     "capture_range_strided_us_per_melem", "per million broadcast ones"},
    {&CaptureCost::saved_us_per_mb, "saved_us_per_mb", "capture_saved_us_per_mb",
     "per MiB of integer inputs saved"},
    {&CaptureCost::timeline_boundary_us, "timeline_boundary_us", "capture_timeline_boundary_us",
     "per event boundary of the host timeline"},
    {&CaptureCost::timeline_backward_boundary_us, "timeline_backward_boundary_us",
     "capture_timeline_backward_boundary_us",
     "per event boundary of the backward on the host timeline"},
};

namespace {

// The double field of `m` named by `figure`.`field`; a missing one is a bug in the table.
const google::protobuf::FieldDescriptor& FigureField(const google::protobuf::Message& m,
                                                     const CaptureFigure& figure,
                                                     const char* CaptureFigure::*field) {
  const google::protobuf::FieldDescriptor* f = m.GetDescriptor()->FindFieldByName(figure.*field);
  if (!f || f->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE)
    throw std::logic_error(m.GetTypeName() + " has no double field " + figure.*field);
  return *f;
}

}  // namespace

CaptureCost CaptureCostFromMessage(const google::protobuf::Message& m,
                                   const char* CaptureFigure::*field) {
  CaptureCost c;
  for (const CaptureFigure& figure : kCaptureFigures)
    c.*figure.member = m.GetReflection()->GetDouble(m, &FigureField(m, figure, field));
  return c;
}

void SetCaptureCostInMessage(const CaptureCost& cost, const char* CaptureFigure::*field,
                             google::protobuf::Message& m) {
  for (const CaptureFigure& figure : kCaptureFigures)
    m.GetReflection()->SetDouble(&m, &FigureField(m, figure, field), cost.*figure.member);
}

CaptureCost CaptureCostFromFigures(const proto::CaptureCostFigures& f) {
  return CaptureCostFromMessage(f, &CaptureFigure::figures_field);
}

CaptureCost CaptureCostFor(const proto::Workload& w, const CaptureCost& fallback) {
  const proto::CaptureCostFigures& f = w.original().capture_cost();
  return f.boundary_us() > 0 ? CaptureCostFromFigures(f) : fallback;
}

std::string CaptureCost::Describe() const {
  std::string out;
  for (const CaptureFigure& figure : kCaptureFigures) {
    const double us = this->*figure.member;
    if (us <= 0 && figure.member != &CaptureCost::boundary_us) continue;
    // Said with the host timeline, where one is used (DescribeHostTimeline's callers).
    if (figure.member == &CaptureCost::timeline_boundary_us ||
        figure.member == &CaptureCost::timeline_backward_boundary_us)
      continue;
    char buf[96];
    std::snprintf(buf, sizeof(buf), "%s%.3f us %s", out.empty() ? "" : ", ", us, figure.per);
    out += buf;
  }
  return out;
}

bool CaptureRecordedIntegerInputs(const proto::Workload& w) {
  int64_t ranged = 0, saved = 0;
  for (const proto::Tensor& t : w.tensors())
    if (t.has_range()) ranged += t.numel();
  for (const proto::IntegerData& d : w.integer_data())
    saved += static_cast<int64_t>(d.data().size());
  return ranged >= 100000 || saved >= 800000;
}

namespace {

// Each op's span boundaries on the linked trace, with what the capture cost at each.
std::vector<std::pair<double, double>> CapturePoints(const proto::Workload& w,
                                                     const CaptureCost& cost) {
  std::unordered_map<int64_t, int64_t> saved;  // op id -> bytes of its saved integer inputs
  for (const proto::IntegerData& d : w.integer_data())
    saved[d.op_id()] += static_cast<int64_t>(d.data().size());
  std::vector<std::pair<double, double>> points;
  for (const proto::Op& o : w.ops()) {
    if (!o.has_cpu_span()) continue;
    auto it = saved.find(o.id());
    const double start = cost.BeforeStart(o, w, it == saved.end() ? 0 : it->second);
    points.push_back({o.cpu_start_us(), cost.boundary_us + start});
    points.push_back({o.cpu_start_us() + o.cpu_duration_us(), cost.boundary_us});
  }
  return points;
}

// The same on the host timeline, where Kineto alone cost timeline_boundary_us at each, or
// timeline_backward_boundary_us at the autograd engine's.
std::vector<std::pair<double, double>> TimelinePoints(const proto::Workload& w,
                                                      const CaptureCost& cost) {
  const OpTree tree(w);
  std::vector<std::pair<double, double>> points;
  for (int i = 0; i < w.ops_size(); ++i) {
    const proto::Op& o = w.ops(i);
    if (!o.has_timeline_start_us()) continue;
    const double us = cost.TimelineBoundaryUs(IssuerOf(w, tree, i) == Issuer::kBackward);
    points.push_back({o.timeline_start_us(), us});
    points.push_back({o.timeline_start_us() + o.timeline_duration_us(), us});
  }
  return points;
}

}  // namespace

SpanBoundaries::SpanBoundaries(const proto::Workload& w, const CaptureCost& cost)
    : SpanBoundaries(CapturePoints(w, cost)) {}

SpanBoundaries SpanBoundaries::OnTimeline(const proto::Workload& w, const CaptureCost& cost) {
  return SpanBoundaries(TimelinePoints(w, cost));
}

SpanBoundaries::SpanBoundaries(std::vector<std::pair<double, double>> points) {
  std::sort(points.begin(), points.end());
  at_us_.reserve(points.size());
  cost_before_.reserve(points.size() + 1);
  cost_before_.push_back(0);
  for (const auto& [at, us] : points) {
    at_us_.push_back(at);
    cost_before_.push_back(cost_before_.back() + us);
  }
}

std::pair<size_t, size_t> SpanBoundaries::Range(double from_us, double to_us) const {
  const auto first = std::lower_bound(at_us_.begin(), at_us_.end(), from_us);
  const auto last = std::upper_bound(first, at_us_.end(), to_us);
  return {static_cast<size_t>(first - at_us_.begin()), static_cast<size_t>(last - at_us_.begin())};
}

int64_t SpanBoundaries::Count(double from_us, double to_us) const {
  const auto [first, last] = Range(from_us, to_us);
  return static_cast<int64_t>(last - first);
}

double SpanBoundaries::CostUs(double from_us, double to_us) const {
  const auto [first, last] = Range(from_us, to_us);
  return cost_before_[last] - cost_before_[first];
}

RecordedHostGaps::RecordedHostGaps(const proto::Workload& w, double step_start_us,
                                   const CaptureCost& cost)
    : boundaries_(w, cost), latest_end_us_(step_start_us) {
  if (!HostTimelineUsed(w)) return;
  timeline_ = SpanBoundaries::OnTimeline(w, cost);
  for (const proto::Segment& s : w.segments())
    if (s.kind() == proto::Segment::ITERATION && s.has_span()) step_starts_.push_back(s.start_us());
  std::sort(step_starts_.begin(), step_starts_.end());
  step_ = StepOf(step_start_us);
  if (step_ >= 0 && step_starts_[step_] == step_start_us) timeline_end_us_ = step_start_us;
}

int RecordedHostGaps::StepOf(double us) const {
  return static_cast<int>(std::upper_bound(step_starts_.begin(), step_starts_.end(), us) -
                          step_starts_.begin()) -
         1;
}

double RecordedHostGaps::Before(const proto::Op& op) {
  const double start = op.cpu_start_us();
  double gap = 0;
  if (latest_end_us_ >= 0 && start > latest_end_us_)
    gap = start - latest_end_us_ - boundaries_.CostUs(latest_end_us_, start);
  latest_end_us_ = std::max(latest_end_us_, start + op.cpu_duration_us());
  if (!timeline_) return std::max(gap, 0.0);
  if (const int step = StepOf(start); step != step_) {  // a step's first op: from its start
    timeline_end_us_ = step_ >= 0 && step >= 0 ? step_starts_[step] : -1;
    step_ = step;
  }
  if (!op.has_timeline_start_us()) {
    timeline_end_us_ = -1;
    return std::max(gap, 0.0);
  }
  const double at = op.timeline_start_us();
  if (timeline_end_us_ >= 0)
    gap =
        at > timeline_end_us_ ? at - timeline_end_us_ - timeline_->CostUs(timeline_end_us_, at) : 0;
  timeline_end_us_ = std::max(timeline_end_us_, at + op.timeline_duration_us());
  return std::max(gap, 0.0);
}

const char* IssuerName(Issuer issuer) {
  switch (issuer) {
    case Issuer::kBackward:
      return "backward";
    case Issuer::kOptimizer:
      return "optimizer";
    case Issuer::kForward:
      break;
  }
  return "forward";
}

Issuer IssuerOf(const proto::Workload& w, const OpTree& tree, int index) {
  for (int at = index; at >= 0; at = tree.Parent(at)) {
    const std::string_view name = w.ops(at).name();
    if (name.starts_with("autograd::engine::evaluate_function")) return Issuer::kBackward;
    if (name.starts_with("Optimizer.")) return Issuer::kOptimizer;
  }
  return Issuer::kForward;
}

bool HasBackward(const proto::Workload& w) {
  for (const proto::Op& op : w.ops())
    if (op.name().starts_with("autograd::engine::evaluate_function")) return true;
  return false;
}

namespace {

// Whether op `i` is where its node was recorded: the innermost op dispatched at the autograd
// level, where the trace records sequence numbers (ops below it, a composite's kernel's own
// calls, record -1); else an op without children.
bool RecordsAtThisLevel(const proto::Workload& w, const OpTree& tree, int i, bool seq_recorded) {
  if (!seq_recorded) return tree.Children(i).empty();
  if (w.ops(i).seq_id() < 0) return false;
  for (int c : tree.Children(i))
    if (w.ops(c).seq_id() >= 0) return false;
  return true;
}

// Walks a training step's ops in start order, as its forward ran them, tracking which tensors
// require grad (ForwardAutogradGraph).
class ForwardGraphWalk {
 public:
  ForwardGraphWalk(const proto::Workload& w, const OpTree& tree, ForwardGraph& g)
      : w_(w),
        tree_(tree),
        g_(g),
        produced_(w.tensors_size(), false),
        requires_grad_(w.tensors_size(), false),
        seq_recorded_(std::any_of(w.ops().begin(), w.ops().end(),
                                  [](const proto::Op& op) { return op.seq_id() > 0; })) {
    issuer_.reserve(w.ops_size());
    for (int i = 0; i < w.ops_size(); ++i) issuer_.push_back(IssuerOf(w, tree, i));
    for (int i = 0; i < w.ops_size(); ++i)  // the storages the optimizer writes in place
      if (issuer_[i] == Issuer::kOptimizer)
        ForEachWrittenInput(w.ops(i), [&](int t) { updated_.insert(w.tensors(t).storage_id()); });
  }

  void Op(int i) {
    const proto::Op& op = w_.ops(i);
    const bool forward = issuer_[i] == Issuer::kForward;
    const bool reads_grad = forward && ReadsGrad(op);
    std::unordered_set<int> written;
    ForEachWrittenInput(op, [&](int t) { written.insert(t); });
    const bool updates_parameter = std::any_of(written.begin(), written.end(),
                                               [&](int t) { return g_.parameters.count(t) > 0; });
    const bool detach = op.name() == "aten::detach" || op.name() == "detach";
    bool fresh_output = false;  // a floating-point output that is not an input handed back
    for (const proto::Value& v : op.outputs())
      ForEachTensorIn(v, [&](int t) {
        const bool handed_back = !written.count(t) && IsInput(op, t);
        produced_[t] = true;
        if (!forward || !IsFloatingDType(w_.tensors(t).dtype()) || handed_back) return;
        fresh_output = true;
        if (reads_grad && !detach) requires_grad_[t] = true;
      });
    g_.records_node[i] = reads_grad && fresh_output && !updates_parameter && !detach &&
                         op.schema() >= 0 && RecordsAtThisLevel(w_, tree_, i, seq_recorded_);
  }

 private:
  // ForEachTensor over the entries the workload holds.
  void ForEachTensorIn(const proto::Value& v, const std::function<void(int)>& fn) const {
    ForEachTensor(v, [&](int t) {
      if (t < w_.tensors_size()) fn(t);
    });
  }

  // Calls fn(entry) for each tensor of the inputs `op`'s schema marks written in place (each
  // schema parsed once).
  void ForEachWrittenInput(const proto::Op& op, const std::function<void(int)>& fn) {
    if (op.schema() < 0 || op.schema() >= w_.schemas_size()) return;
    auto [it, fresh] = mutated_.try_emplace(op.schema());
    if (fresh)
      for (const SchemaArg& a : ParseSchemaArgs(w_.schemas(op.schema())))
        it->second.push_back(a.mutated);
    for (int k = 0; k < op.inputs_size() && k < static_cast<int>(it->second.size()); ++k)
      if (it->second[k]) ForEachTensorIn(op.inputs(k), fn);
  }

  // Whether a floating-point input requires grad; a parameter met here for the first time is
  // added to the graph's.
  bool ReadsGrad(const proto::Op& op) {
    bool reads = false;
    for (const proto::Value& v : op.inputs())
      ForEachTensorIn(v, [&](int t) {
        if (!IsFloatingDType(w_.tensors(t).dtype())) return;
        if (!produced_[t] && updated_.count(w_.tensors(t).storage_id())) {
          g_.parameters.insert(t);
          requires_grad_[t] = true;
        }
        reads = reads || requires_grad_[t];
      });
    return reads;
  }

  bool IsInput(const proto::Op& op, int t) const {
    bool found = false;
    for (const proto::Value& v : op.inputs()) ForEachTensorIn(v, [&](int in) { found |= in == t; });
    return found;
  }

  const proto::Workload& w_;
  const OpTree& tree_;
  ForwardGraph& g_;
  std::vector<Issuer> issuer_;                              // by op index
  std::unordered_set<int64_t> updated_;                     // storages the optimizer writes
  std::unordered_map<int32_t, std::vector<bool>> mutated_;  // schema -> its args written
  std::vector<bool> produced_, requires_grad_;
  const bool seq_recorded_;
};

}  // namespace

ForwardGraph ForwardAutogradGraph(const proto::Workload& w, const OpTree& tree) {
  ForwardGraph g;
  g.records_node.assign(w.ops_size(), false);
  if (!HasBackward(w)) return g;
  std::vector<int> order(w.ops_size());  // ids are start order
  for (int i = 0; i < w.ops_size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return w.ops(a).id() < w.ops(b).id(); });
  ForwardGraphWalk walk(w, tree, g);
  for (int i : order) walk.Op(i);
  return g;
}

Result<GapsByIssuer> RecordedGapsByIssuer(const proto::Workload& w, const CaptureCost& cost) {
  if (!w.kineto().present())
    return Status::InvalidInput("no Kineto trace is linked: it records no host gaps");
  const OpTree tree(w);
  MIMIC_ASSIGN_OR_RETURN(const proto::Segment* seg, FindSegment(w, -1, ""));
  const int segment = seg ? tree.IndexOf(seg->op_id()) : -1;
  RecordedHostGaps gaps(w, -1, cost);  // no gap before the first op
  GapsByIssuer out;
  int64_t spans = 0;
  for (int index : ReplayableOps(w, tree, segment, /*include_compiled=*/true)) {
    const proto::Op& op = w.ops(index);
    if (!op.has_cpu_span()) continue;
    const double gap = gaps.Before(op);
    if (spans++ > 0) out.us[static_cast<int>(IssuerOf(w, tree, index))].push_back(gap);
  }
  if (spans < 2) return Status::InvalidInput("its step has fewer than two ops with a host span");
  return out;
}

}  // namespace mimic::eg
