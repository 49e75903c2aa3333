// The integer inputs a capture saved beside its execution trace: PyTorch's observer, with
// ENABLE_PYTORCH_EXECUTION_TRACE_SAVE_INTEGRAL_TENSOR_DATA=<op,op> and extra resource collection
// on, writes the bytes of every integer tensor input of the named ops to
// `<trace minus .json>_resources/nid_<op id>_tid_<tensor ordinal>.dat`.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

#include "mimic/eg/workload.h"

namespace mimic::eg {
namespace {

int TensorByOrdinal(const google::protobuf::RepeatedPtrField<proto::Value>& values,
                    int64_t& ordinal) {
  for (const proto::Value& v : values) {
    if (v.kind_case() == proto::Value::kTensor) {
      if (ordinal-- == 0) return v.tensor();
    } else if (v.kind_case() == proto::Value::kList) {
      if (int t = TensorByOrdinal(v.list().items(), ordinal); t >= 0 || ordinal < 0) return t;
    }
  }
  return -1;
}

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// "nid_<op id>_tid_<ordinal>.dat" -> (op id, ordinal); false for any other name.
bool ParseName(std::string_view name, int64_t* op_id, int32_t* ordinal) {
  constexpr std::string_view kNid = "nid_", kTid = "_tid_", kDat = ".dat";
  if (!name.starts_with(kNid) || !name.ends_with(kDat)) return false;
  name = name.substr(kNid.size(), name.size() - kNid.size() - kDat.size());
  const size_t tid = name.find(kTid);
  if (tid == std::string_view::npos) return false;
  const std::string_view a = name.substr(0, tid), b = name.substr(tid + kTid.size());
  auto [pa, ea] = std::from_chars(a.data(), a.data() + a.size(), *op_id);
  auto [pb, eb] = std::from_chars(b.data(), b.data() + b.size(), *ordinal);
  return ea == std::errc() && eb == std::errc() && pa == a.data() + a.size() &&
         pb == b.data() + b.size() && !a.empty() && !b.empty();
}

}  // namespace

int InputTensorByOrdinal(const proto::Op& op, int64_t ordinal) {
  if (ordinal < 0) return -1;
  return TensorByOrdinal(op.inputs(), ordinal);
}

std::string IntegerDataDir(const std::string& et_path) {
  // The observer's own rule (a trace written as X.json: X_resources/), also for a trace that
  // was gzipped afterwards (X.json.gz), and Python's for one it wrote gzipped
  // (X.json.gz: X.json_resources/).
  std::vector<std::string> stems;
  std::string base = et_path;
  if (base.ends_with(".gz")) {
    base.resize(base.size() - 3);
    stems.push_back(base);
  }
  if (base.ends_with(".json")) stems.insert(stems.begin(), base.substr(0, base.size() - 5));
  for (const std::string& stem : stems)
    if (IsDirectory(stem + "_resources")) return stem + "_resources";
  return "";
}

Status AttachIntegerData(const std::string& et_path, proto::Workload& w) {
  const std::string dir = IntegerDataDir(et_path);
  if (dir.empty()) return Status::Ok();
  DIR* d = opendir(dir.c_str());
  if (!d) return Status::Io(dir + ": cannot list the folder");
  std::vector<std::string> names;
  while (const dirent* e = readdir(d)) names.emplace_back(e->d_name);
  closedir(d);
  std::sort(names.begin(), names.end());
  const std::string folder = dir.substr(dir.find_last_of('/') + 1);
  for (const std::string& name : names) {
    int64_t op_id = 0;
    int32_t ordinal = 0;
    if (!ParseName(name, &op_id, &ordinal)) continue;
    std::ifstream in(dir + "/" + name, std::ios::binary);
    if (!in) return Status::Io(dir + "/" + name + ": cannot read the file");
    proto::IntegerData& data = *w.add_integer_data();
    data.set_op_id(op_id);
    data.set_ordinal(ordinal);
    data.set_file(folder + "/" + name);
    data.mutable_data()->assign(std::istreambuf_iterator<char>(in), {});
  }
  return Status::Ok();
}

}  // namespace mimic::eg
