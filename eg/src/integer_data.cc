// The integer inputs a capture saved beside its execution trace: PyTorch's observer, with
// ENABLE_PYTORCH_EXECUTION_TRACE_SAVE_INTEGRAL_TENSOR_DATA=<op,op> and extra resource collection
// on, writes the bytes of every integer tensor input of the named ops to
// `<trace minus .json>_resources/nid_<op id>_tid_<tensor ordinal>.dat`.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <fstream>
#include <string>
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

namespace {

// The most bytes any tensor of the workload holds (numel x itemsize): a saved file larger than
// that fits none of them, and is not read.
int64_t LargestTensorBytes(const proto::Workload& w) {
  int64_t largest = 0;
  for (const proto::Tensor& t : w.tensors()) {
    int64_t bytes = 0;
    if (__builtin_mul_overflow(t.numel(), t.itemsize(), &bytes)) return INT64_MAX;
    largest = std::max(largest, bytes);
  }
  return largest;
}

}  // namespace

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
  const int64_t largest = LargestTensorBytes(w);
  for (const std::string& name : names) {
    int64_t op_id = 0;
    int32_t ordinal = 0;
    if (!ParseName(name, &op_id, &ordinal)) continue;
    const std::string path = dir + "/" + name;
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) return Status::Io(path + ": cannot read the file");
    if (!S_ISREG(st.st_mode)) return Status::InvalidInput(path + ":byte 0: not a regular file");
    if (st.st_size > largest)
      return Status::InvalidInput(path + ":byte 0: " + std::to_string(st.st_size) +
                                  " bytes, more than any tensor of the trace holds (" +
                                  std::to_string(largest) + ")");
    std::string bytes(static_cast<size_t>(st.st_size), '\0');
    std::ifstream in(path, std::ios::binary);
    if (!in || !in.read(bytes.data(), st.st_size))
      return Status::Io(path + ": cannot read the file");
    proto::IntegerData& data = *w.add_integer_data();
    data.set_op_id(op_id);
    data.set_ordinal(ordinal);
    data.set_file(folder + "/" + name);
    data.set_data(std::move(bytes));
  }
  return Status::Ok();
}

}  // namespace mimic::eg
