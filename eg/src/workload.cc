#include "mimic/eg/workload.h"

#include <algorithm>
#include <functional>
#include <set>
#include <unordered_set>

#include "mimic/base/file.h"
#include "mimic/eg/execution_trace.h"
#include "mimic/eg/kineto.h"

namespace mimic::eg {
namespace {

// A `.mimic` file is this magic followed by the serialized proto::Workload.
constexpr std::string_view kMagic = "MIMICWL\n";

bool StartsWith(const std::string& s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

void AddSource(proto::Workload& w, const char* role, const std::string& path,
               const FileContents& file) {
  proto::SourceFile& s = *w.mutable_provenance()->add_sources();
  s.set_role(role);
  s.set_path(path);
  s.set_sha256(file.sha256);
  s.set_bytes(file.bytes.size());
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
  for (const proto::Op& op : w.ops()) {
    if (op.schema() >= w.schemas_size())
      return Status::InvalidInput(path + ":node id " + std::to_string(op.id()) + ": schema index out of range");
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

bool IsWrapperOp(const proto::Op& op) {
  const std::string& n = op.name();
  return StartsWith(n, "ProfilerStep#") || StartsWith(n, "## ") || StartsWith(n, "[pytorch|profiler|") ||
         StartsWith(n, "profiler::") || StartsWith(n, "record_function") || StartsWith(n, "Optimizer.") ||
         StartsWith(n, "autograd::engine::evaluate_function");
}

bool IsCollectiveOp(const proto::Op& op) {
  const std::string& n = op.name();
  return n == "record_param_comms" || StartsWith(n, "c10d::") || StartsWith(n, "nccl:") ||
         StartsWith(n, "gloo:");
}

std::vector<int> ReplayableOps(const proto::Workload& w, const OpTree& tree, int segment_op) {
  const int n = w.ops_size();
  auto candidate = [&](int i) { return w.ops(i).schema() >= 0 && !IsWrapperOp(w.ops(i)); };
  std::vector<int> out;
  for (int i = 0; i < n; ++i) {
    if (!candidate(i)) continue;
    bool nested = false;
    for (int p = tree.Parent(i), guard = 0; p >= 0 && guard < n; p = tree.Parent(p), ++guard) {
      if (candidate(p)) {
        nested = true;
        break;
      }
    }
    if (nested) continue;
    if (segment_op >= 0 && !tree.IsWithin(i, segment_op)) continue;
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
    s.collectives += IsCollectiveOp(op);
    threads.insert(op.thread());
  }
  s.threads = static_cast<int64_t>(threads.size());
  const OpTree tree(w);
  s.replayable_ops = static_cast<int64_t>(ReplayableOps(w, tree).size());
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
  if (bytes.substr(0, kMagic.size()) != kMagic)
    return Status::InvalidInput(path + ":byte 0: not a Mimic workload file");
  proto::Workload w;
  const std::string_view body = bytes.substr(kMagic.size());
  if (!w.ParseFromArray(body.data(), static_cast<int>(body.size())))
    return Status::InvalidInput(path + ":byte " + std::to_string(kMagic.size()) +
                                ": corrupt workload (protobuf does not parse)");
  if (w.format().major() > kWorkloadFormatMajor)
    return Status::Unsupported(path + ":byte " + std::to_string(kMagic.size()) +
                               ": workload format " + std::to_string(w.format().major()) + "." +
                               std::to_string(w.format().minor()) + " is newer than this Mimic reads (" +
                               std::to_string(kWorkloadFormatMajor) + ".x)");
  MIMIC_RETURN_IF_ERROR(CheckParentLinks(path, w));
  for (const proto::Op& op : w.ops())
    for (const auto* vals : {&op.inputs(), &op.outputs()})
      for (const proto::Value& v : *vals)
        if (v.kind_case() == proto::Value::kTensor && v.tensor() >= w.tensors_size())
          return Status::InvalidInput(path + ":node id " + std::to_string(op.id()) + ": dangling tensor index");
  return w;
}

Status SaveWorkload(const std::string& path, const proto::Workload& workload) {
  std::string bytes(kMagic);
  if (!workload.AppendToString(&bytes)) return Status::Internal("cannot serialize the workload");
  return WriteFileAtomic(path, bytes);
}

namespace {

// Normalizes an execution trace (and links a Kineto trace when one is given). Each JSON buffer
// is released as soon as it has been read.
using KinetoSource = std::function<Result<FileContents>()>;  // empty: no Kineto trace

Result<proto::Workload> Build(const std::string& path, FileContents et, const std::string& kineto_path,
                              const KinetoSource& read_kineto) {
  MIMIC_ASSIGN_OR_RETURN(proto::Workload w, ParseExecutionTrace(path, et.bytes.view()));
  w.mutable_format()->set_major(kWorkloadFormatMajor);
  w.mutable_format()->set_minor(kWorkloadFormatMinor);
  w.mutable_provenance()->set_mimic_version(MIMIC_VERSION);
  AddSource(w, "execution_trace", path, et);
  et = FileContents();
  MIMIC_RETURN_IF_ERROR(CheckParentLinks(path, w));
  if (read_kineto) {
    MIMIC_ASSIGN_OR_RETURN(FileContents kineto, read_kineto());
    MIMIC_ASSIGN_OR_RETURN(KinetoTrace trace, ParseKinetoTrace(kineto_path, kineto.bytes.view()));
    AddSource(w, "kineto", kineto_path, kineto);
    kineto = FileContents();
    MIMIC_RETURN_IF_ERROR(LinkKineto(kineto_path, trace, w));
  }
  return w;
}

}  // namespace

Result<proto::Workload> LoadWorkload(const std::string& path, const LoadOptions& options) {
  MIMIC_ASSIGN_OR_RETURN(FileContents file, ReadFile(path));
  if (file.bytes.view().substr(0, kMagic.size()) == kMagic) return ParseWorkloadFile(path, file.bytes.view());
  KinetoSource kineto;
  if (!options.kineto_path.empty()) kineto = [&] { return ReadFile(options.kineto_path); };
  return Build(path, std::move(file), options.kineto_path, kineto);
}

Result<proto::Workload> LoadWorkloadFromMemory(const std::string& et_name, std::string_view et_raw,
                                               const std::string& kineto_name,
                                               std::string_view kineto_raw) {
  MIMIC_ASSIGN_OR_RETURN(FileContents et, ReadBytes(et_name, et_raw));
  KinetoSource kineto;
  if (!kineto_raw.empty()) kineto = [&] { return ReadBytes(kineto_name, kineto_raw); };
  return Build(et_name, std::move(et), kineto_name, kineto);
}

}  // namespace mimic::eg
