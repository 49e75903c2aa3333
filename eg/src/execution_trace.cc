// Execution trace reader. The top-level object and the `nodes` array are walked with
// JsonScanner; each node is then parsed on its own by simdjson's DOM parser and converted into
// proto ops, so memory stays near the size of the JSON text itself.

#include "mimic/eg/execution_trace.h"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "json_scan.h"
#include "mimic/eg/workload.h"

namespace mimic::eg {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

constexpr std::array<std::string_view, 9> kKnownSchemas = {
    "1.0.1",
    "1.0.2-chakra.0.0.4",
    "1.0.3-chakra.0.0.4",
    "1.0.4-chakra.0.0.4",
    "1.1.0-chakra.0.0.4",
    "1.1.1-chakra.0.0.4",
    "1.1.1-chakra.1.0.0",
    "1.0.2",
    "1.0.3",
};

struct DTypeName {
  std::string_view name;
  proto::DType dtype;
};
constexpr DTypeName kDTypes[] = {
    {"float", proto::FLOAT32},
    {"double", proto::FLOAT64},
    {"c10::Half", proto::FLOAT16},
    {"c10::BFloat16", proto::BFLOAT16},
    {"signed char", proto::INT8},
    {"unsigned char", proto::UINT8},
    {"short int", proto::INT16},
    {"short", proto::INT16},
    {"int", proto::INT32},
    {"long int", proto::INT64},
    {"long", proto::INT64},
    {"long long int", proto::INT64},
    {"bool", proto::BOOL},
    {"c10::complex<float>", proto::COMPLEX64},
    {"c10::complex<double>", proto::COMPLEX128},
    {"c10::Float8_e4m3fn", proto::FLOAT8_E4M3FN},
    {"c10::Float8_e5m2", proto::FLOAT8_E5M2},
    {"unsigned short", proto::UINT16},
    {"unsigned int", proto::UINT32},
    {"unsigned long", proto::UINT64},
};

// "Tensor(float)" -> FLOAT32.
proto::DType DTypeOfTensorType(std::string_view type) {
  const size_t open = type.find('(');
  if (open == std::string_view::npos || type.back() != ')') return proto::DTYPE_UNKNOWN;
  return DTypeOfScalarTypeName(type.substr(open + 1, type.size() - open - 2));
}

bool IsTensorType(std::string_view type) { return type.substr(0, 6) == "Tensor"; }

// "GenericList[Int,Tensor(float)]" -> {"Int", "Tensor(float)"}; {} for non-container types.
std::vector<std::string_view> ContainerArgs(std::string_view type) {
  std::vector<std::string_view> args;
  const size_t open = type.find('[');
  if (open == std::string_view::npos || type.back() != ']') return args;
  int depth = 0;
  size_t start = open + 1;
  for (size_t i = open + 1; i + 1 < type.size(); ++i) {
    const char c = type[i];
    if (c == '[' || c == '(' || c == '<') ++depth;
    if (c == ']' || c == ')' || c == '>') --depth;
    if (c == ',' && depth == 0) {
      args.push_back(type.substr(start, i - start));
      start = i + 1;
    }
  }
  if (start < type.size() - 1) args.push_back(type.substr(start, type.size() - 1 - start));
  return args;
}

int64_t AsInt(element e) {
  switch (e.type()) {
    case element_type::INT64: return int64_t(e);
    case element_type::UINT64: return static_cast<int64_t>(uint64_t(e));
    case element_type::DOUBLE: return static_cast<int64_t>(double(e));
    case element_type::BOOL: return bool(e) ? 1 : 0;
    default: throw simdjson::simdjson_error(simdjson::INCORRECT_TYPE);
  }
}

double AsDouble(element e) {
  switch (e.type()) {
    case element_type::INT64: return static_cast<double>(int64_t(e));
    case element_type::UINT64: return static_cast<double>(uint64_t(e));
    case element_type::DOUBLE: return double(e);
    default: throw simdjson::simdjson_error(simdjson::INCORRECT_TYPE);
  }
}

// Hash maps keyed by std::string that can be probed with a string_view without allocating.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using InternMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// Interns `s` into `table` (a repeated string field) through `index`.
int32_t Intern(std::string_view s, InternMap& index,
               google::protobuf::RepeatedPtrField<std::string>* table) {
  if (auto it = index.find(s); it != index.end()) return it->second;
  const int32_t id = table->size();
  table->Add(std::string(s));
  index.emplace(std::string(s), id);
  return id;
}

// Walks a JSON array element by element (dom::array::at(i) would rescan from the start).
class Cursor {
 public:
  Cursor() = default;
  explicit Cursor(element e) {
    simdjson::dom::array a;
    if (e.get_array().get(a) == simdjson::SUCCESS) it_ = a.begin(), end_ = a.end(), valid_ = true;
  }
  // The next element, or false when there is none.
  bool Next(element* out) {
    if (!valid_ || it_ == end_) return false;
    *out = *it_;
    ++it_;
    return true;
  }

 private:
  simdjson::dom::array::iterator it_, end_;
  bool valid_ = false;
};

// Thrown for semantic problems inside a node; carries a message for the caller to position.
struct NodeError {
  std::string message;
};

class TraceBuilder {
 public:
  TraceBuilder(const std::string& path, proto::Workload& w) : path_(path), w_(w) {
    Intern("", type_index_, w_.mutable_types());  // index 0: no type recorded
  }

  void AddNode(element node);
  Status Finish();

 private:
  struct IoJson {
    element values, shapes, types, strides;
    bool has_values = false, has_shapes = false, has_types = false, has_strides = false;
  };

  void ConvertValues(const IoJson& io, google::protobuf::RepeatedPtrField<proto::Value>* out);
  void ConvertValue(element value, std::string_view type, const element* shape,
                    const element* strides, proto::Value* out);
  int32_t InternTensor(element value, std::string_view type, const element* shape,
                       const element* strides);
  int32_t InternSchema(std::string_view schema);
  void ApplyTensorRange(std::string_view json, proto::Op& op);
  void ReadProcessGroups(const proto::Op& op);

  const std::string& path_;
  proto::Workload& w_;
  InternMap schema_index_;
  InternMap type_index_;
  InternMap tensor_index_;
  std::string key_;  // scratch for tensor keys
  simdjson::dom::parser aux_parser_;
};

void TraceBuilder::AddNode(element node) {
  proto::Op& op = *w_.add_ops();
  op.set_schema(-1);
  IoJson in, out;
  bool has_id = false;
  std::string_view tensor_range;
  for (auto field : node.get_object()) {
    const std::string_view key = field.key;
    const element v = field.value;
    if (key == "id") {
      op.set_id(AsInt(v));
      has_id = true;
    } else if (key == "name") {
      op.set_name(std::string(std::string_view(v)));
    } else if (key == "parent" || key == "ctrl_deps") {
      op.set_parent(AsInt(v));
    } else if (key == "inputs" || key == "outputs") {
      IoJson& io = key == "inputs" ? in : out;
      if (v.type() == element_type::OBJECT) {  // 1.0.2+: {values, shapes, types, strides}
        for (auto sub : v.get_object()) {
          if (sub.key == "values") io.values = sub.value, io.has_values = true;
          else if (sub.key == "shapes") io.shapes = sub.value, io.has_shapes = true;
          else if (sub.key == "types") io.types = sub.value, io.has_types = true;
          else if (sub.key == "strides") io.strides = sub.value, io.has_strides = true;
        }
      } else {
        io.values = v, io.has_values = true;
      }
    } else if (key == "input_shapes") {
      in.shapes = v, in.has_shapes = true;
    } else if (key == "input_types") {
      in.types = v, in.has_types = true;
    } else if (key == "input_strides") {
      in.strides = v, in.has_strides = true;
    } else if (key == "output_shapes") {
      out.shapes = v, out.has_shapes = true;
    } else if (key == "output_types") {
      out.types = v, out.has_types = true;
    } else if (key == "output_strides") {
      out.strides = v, out.has_strides = true;
    } else if (key == "attrs") {
      for (element attr : v.get_array()) {
        const std::string_view name = attr["name"];
        const element value = attr["value"];
        if (name == "rf_id") op.set_rf_id(AsInt(value));
        else if (name == "fw_parent") op.set_fw_parent(AsInt(value));
        else if (name == "seq_id") op.set_seq_id(AsInt(value));
        else if (name == "scope") op.set_scope(AsInt(value));
        else if (name == "tid") op.set_thread(AsInt(value));
        else if (name == "fw_tid") op.set_fw_tid(AsInt(value));
        else if (name == "op_schema") op.set_schema(InternSchema(std::string_view(value)));
        else if (name == "kernel_backend") op.set_kernel_backend(std::string(std::string_view(value)));
        else if (name == "kernel_file") op.set_kernel_file(std::string(std::string_view(value)));
        else if (name == "tensor_range") tensor_range = std::string_view(value);
        else {
          std::string_view type;
          if (attr["type"].get(type) != simdjson::SUCCESS) type = "";
          ConvertValue(value, type, nullptr, nullptr, &(*op.mutable_attrs())[std::string(name)]);
        }
      }
    } else if (key == "rf_id") {
      op.set_rf_id(AsInt(v));
    } else if (key == "fw_parent") {
      op.set_fw_parent(AsInt(v));
    } else if (key == "seq_id") {
      op.set_seq_id(AsInt(v));
    } else if (key == "scope") {
      op.set_scope(AsInt(v));
    } else if (key == "tid") {
      op.set_thread(AsInt(v));
    } else if (key == "fw_tid") {
      op.set_fw_tid(AsInt(v));
    } else if (key == "op_schema") {
      op.set_schema(InternSchema(std::string_view(v)));
    } else if (key == "kernel_backend") {
      op.set_kernel_backend(std::string(std::string_view(v)));
    } else if (key == "kernel_file") {
      op.set_kernel_file(std::string(std::string_view(v)));
    } else if (key == "tensor_range") {
      tensor_range = std::string_view(v);
    }
  }
  if (!has_id) throw NodeError{"node has no \"id\""};
  ConvertValues(in, op.mutable_inputs());
  ConvertValues(out, op.mutable_outputs());
  if (!tensor_range.empty()) ApplyTensorRange(tensor_range, op);
  if (op.name() == "## process_group:init ##") ReadProcessGroups(op);
}

int32_t TraceBuilder::InternSchema(std::string_view schema) {
  if (schema.empty()) return -1;
  return Intern(schema, schema_index_, w_.mutable_schemas());
}

void TraceBuilder::ConvertValues(const IoJson& io,
                                 google::protobuf::RepeatedPtrField<proto::Value>* out) {
  if (!io.has_values) return;
  Cursor values(io.values), types, shapes, strides;
  if (io.has_types) types = Cursor(io.types);
  if (io.has_shapes) shapes = Cursor(io.shapes);
  if (io.has_strides) strides = Cursor(io.strides);
  element value, type, shape, stride;
  while (values.Next(&value)) {
    std::string_view type_name;
    if (types.Next(&type)) type_name = type.get_string();
    const bool has_shape = shapes.Next(&shape);
    const bool has_stride = strides.Next(&stride);
    ConvertValue(value, type_name, has_shape ? &shape : nullptr, has_stride ? &stride : nullptr,
                 out->Add());
  }
}

void TraceBuilder::ConvertValue(element value, std::string_view type, const element* shape,
                                const element* strides, proto::Value* out) {
  out->set_type(Intern(type, type_index_, w_.mutable_types()));
  const element_type kind = value.type();
  if (IsTensorType(type) && kind == element_type::ARRAY) {
    out->set_tensor(InternTensor(value, type, shape, strides));
    return;
  }
  switch (kind) {
    case element_type::NULL_VALUE: out->set_none(true); return;
    case element_type::BOOL: out->set_bool_value(bool(value)); return;
    case element_type::INT64:
    case element_type::UINT64:
      if (type == "Double" || type == "Float") out->set_double_value(AsDouble(value));
      else out->set_int_value(AsInt(value));
      return;
    case element_type::DOUBLE: out->set_double_value(double(value)); return;
    case element_type::STRING: {
      const std::string_view s = value;
      if (s == "<None>" || type == "None") out->set_none(true);
      else if (s == "<Generator>" || s == "<Object>" || type == "Generator") out->set_opaque(std::string(s));
      else if (type == "Device") out->set_device(std::string(s));
      else if (type == "Double" && (s == "inf" || s == "-inf" || s == "nan" || s == "-nan"))
        out->set_double_value(s == "inf" ? std::numeric_limits<double>::infinity()
                              : s == "-inf" ? -std::numeric_limits<double>::infinity()
                                            : std::numeric_limits<double>::quiet_NaN());
      else out->set_string_value(std::string(s));
      return;
    }
    case element_type::ARRAY: {
      const std::vector<std::string_view> args = ContainerArgs(type);
      proto::ValueList* list = out->mutable_list();
      Cursor shapes, stride_list;
      if (shape) shapes = Cursor(*shape);
      if (strides) stride_list = Cursor(*strides);
      size_t i = 0;
      element item_shape, item_stride;
      for (element item : value.get_array()) {
        const std::string_view item_type =
            args.empty() ? std::string_view() : args[std::min(i, args.size() - 1)];
        const bool hs = shapes.Next(&item_shape);
        const bool hst = stride_list.Next(&item_stride);
        ConvertValue(item, item_type, hs ? &item_shape : nullptr, hst ? &item_stride : nullptr,
                     list->add_items());
        ++i;
      }
      return;
    }
    case element_type::OBJECT: out->set_opaque(std::string(simdjson::minify(value))); return;
  }
}

void AppendInt(std::string& key, int64_t v) {
  key.append(reinterpret_cast<const char*>(&v), sizeof(v));
}

int32_t TraceBuilder::InternTensor(element value, std::string_view type, const element* shape,
                                   const element* strides) {
  const simdjson::dom::array fields = value.get_array();
  if (fields.size() < 5) throw NodeError{"tensor value with " + std::to_string(fields.size()) + " fields (expected 5 or 6)"};
  int64_t f[5];
  for (size_t i = 0; i < 5; ++i) f[i] = AsInt(fields.at(i));
  std::string_view device;
  if (fields.size() >= 6) device = fields.at(5).get_string();
  // An undefined tensor: typed "Tensor(nullptr (uninitialized))", or all zeros with no type. A
  // sparse tensor has no storage either ([id,0,0,0,0,""]) but its dtype: it is a tensor.
  if (f[3] == 0 && f[4] == 0 && f[1] == 0 &&
      (type.find("nullptr") != std::string_view::npos || (type.empty() && device.empty())))
    return -1;
  if (f[3] < 0 || f[4] < 0 || f[2] < 0)
    throw NodeError{"tensor " + std::to_string(f[0]) + " has a negative numel, itemsize or offset"};

  key_.clear();
  for (int64_t x : f) AppendInt(key_, x);
  key_.append(device);
  key_.push_back('\0');
  key_.append(type);
  key_.push_back('\0');
  std::vector<int64_t> dims, steps;
  if (shape && shape->type() == element_type::ARRAY)
    for (element d : shape->get_array()) dims.push_back(AsInt(d));
  if (strides && strides->type() == element_type::ARRAY)
    for (element d : strides->get_array()) steps.push_back(AsInt(d));
  AppendInt(key_, static_cast<int64_t>(dims.size()));
  for (int64_t d : dims) AppendInt(key_, d);
  for (int64_t d : steps) AppendInt(key_, d);

  auto [it, inserted] = tensor_index_.try_emplace(key_, w_.tensors_size());
  if (!inserted) return it->second;
  int64_t elements = 1, bytes = 0;
  for (int64_t d : dims) {
    if (d < 0) throw NodeError{"tensor " + std::to_string(f[0]) + " has a negative dimension"};
    if (__builtin_mul_overflow(elements, d, &elements))
      throw NodeError{"tensor " + std::to_string(f[0]) + " has a shape whose size overflows 64 bits"};
  }
  if (__builtin_mul_overflow(std::max(f[3], elements), f[4], &bytes) ||
      __builtin_add_overflow(bytes, f[2] * f[4], &bytes))
    throw NodeError{"tensor " + std::to_string(f[0]) + " is larger than 2^63 bytes"};
  proto::Tensor& t = *w_.add_tensors();
  t.set_tensor_id(f[0]);
  t.set_storage_id(f[1]);
  t.set_offset(f[2]);
  t.set_numel(f[3]);
  t.set_itemsize(f[4]);
  t.set_device(std::string(device));
  t.set_dtype(DTypeOfTensorType(type));
  t.set_type(Intern(type, type_index_, w_.mutable_types()));
  for (int64_t d : dims) t.add_shape(d);
  for (int64_t d : steps) t.add_strides(d);
  return it->second;
}

// tensor_range is a JSON object {"<tensor ordinal>": [min, max], ...}: keys count the op's
// tensor inputs (InputTensorByOrdinal), not its arguments.
void TraceBuilder::ApplyTensorRange(std::string_view json, proto::Op& op) {
  element doc;
  if (aux_parser_.parse(json.data(), json.size()).get(doc) != simdjson::SUCCESS ||
      doc.type() != element_type::OBJECT)
    throw NodeError{"tensor_range is not a JSON object"};
  for (auto field : doc.get_object()) {
    int64_t index = -1;
    for (char c : field.key) {
      if (c < '0' || c > '9') throw NodeError{"tensor_range key is not a tensor index"};
      index = (index < 0 ? 0 : index * 10) + (c - '0');
    }
    if (index < 0) continue;
    const simdjson::dom::array bounds = field.value.get_array();
    if (bounds.size() != 2) throw NodeError{"tensor_range entry is not [min, max]"};
    const int64_t lo = AsInt(bounds.at(0)), hi = AsInt(bounds.at(1));
    const int entry = InputTensorByOrdinal(op, index);
    if (entry < 0) continue;
    proto::Tensor& t = *w_.mutable_tensors(entry);
    if (t.has_range()) {
      t.set_range_min(std::min(t.range_min(), lo));
      t.set_range_max(std::max(t.range_max(), hi));
    } else {
      t.set_has_range(true);
      t.set_range_min(lo);
      t.set_range_max(hi);
    }
  }
}

// `## process_group:init ##` carries a JSON string describing every process group.
void TraceBuilder::ReadProcessGroups(const proto::Op& op) {
  if (op.inputs_size() == 0 || op.inputs(0).kind_case() != proto::Value::kStringValue) return;
  const std::string& json = op.inputs(0).string_value();
  element doc;
  if (aux_parser_.parse(json).get(doc) != simdjson::SUCCESS || doc.type() != element_type::ARRAY)
    throw NodeError{"process_group:init does not hold a JSON list of process groups"};
  auto* prov = w_.mutable_provenance();
  for (element g : doc.get_array()) {
    proto::ProcessGroup& pg = *prov->add_process_groups();
    std::string_view s;
    if (g["pg_name"].get(s) == simdjson::SUCCESS) pg.set_name(std::string(s));
    if (g["pg_desc"].get(s) == simdjson::SUCCESS) pg.set_desc(std::string(s));
    if (g["backend_config"].get(s) == simdjson::SUCCESS) pg.set_backend(std::string(s));
    element size;
    if (g["group_size"].get(size) == simdjson::SUCCESS) pg.set_size(AsInt(size));
    if (g["backend_id"].get(size) == simdjson::SUCCESS) pg.set_backend_id(AsInt(size));
    simdjson::dom::array ranks;
    if (g["ranks"].get(ranks) == simdjson::SUCCESS)
      for (element r : ranks) pg.add_ranks(AsInt(r));
    if (pg.name() == "0" && pg.size() > 0) prov->set_world_size(pg.size());
  }
}

bool ParseStepNumber(std::string_view name, int64_t* step) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (name.substr(0, kPrefix.size()) != kPrefix || name.size() == kPrefix.size()) return false;
  int64_t n = 0;
  for (char c : name.substr(kPrefix.size())) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + (c - '0');
  }
  *step = n;
  return true;
}

Status TraceBuilder::Finish() {
  auto* ops = w_.mutable_ops();
  // Sorting the pointers, not the messages: a message swap copies every field.
  std::sort(ops->pointer_begin(), ops->pointer_end(),
            [](const proto::Op* a, const proto::Op* b) { return a->id() < b->id(); });
  for (int i = 1; i < ops->size(); ++i)
    if (ops->Get(i).id() == ops->Get(i - 1).id())
      return Status::InvalidInput(path_ + ":node id " + std::to_string(ops->Get(i).id()) +
                                  ": duplicate node id " + std::to_string(ops->Get(i).id()));
  std::unordered_set<std::string> devices;
  for (const proto::Tensor& t : w_.tensors())
    if (!t.device().empty() && devices.insert(t.device()).second)
      w_.mutable_provenance()->add_devices(t.device());
  AddTraceSegments(w_);
  return Status::Ok();
}

}  // namespace

proto::DType DTypeOfScalarTypeName(std::string_view name) {
  for (const auto& d : kDTypes)
    if (d.name == name) return d.dtype;
  return proto::DTYPE_UNKNOWN;
}

void AddTraceSegments(proto::Workload& w) {
  for (const proto::Op& op : w.ops()) {
    int64_t step = 0;
    const std::string& name = op.name();
    if (ParseStepNumber(name, &step)) {
      proto::Segment& s = *w.add_segments();
      s.set_kind(proto::Segment::ITERATION);
      s.set_name(name);
      s.set_op_id(op.id());
      s.set_step(step);
    } else if (name.size() > 6 && name.compare(0, 3, "## ") == 0 &&
               name.compare(name.size() - 3, 3, " ##") == 0 && name != "## process_group:init ##") {
      proto::Segment& s = *w.add_segments();
      s.set_kind(proto::Segment::LABEL);
      s.set_name(name);
      s.set_op_id(op.id());
    }
  }
}

bool IsKnownSchema(std::string_view schema) {
  return std::find(kKnownSchemas.begin(), kKnownSchemas.end(), schema) != kKnownSchemas.end();
}

Result<proto::Workload> ParseExecutionTrace(const std::string& path, std::string_view json) {
  std::unique_ptr<InputStream> in = InputStream::FromMemory(path, json);
  return ParseExecutionTrace(path, *in);
}

Result<proto::Workload> ParseExecutionTrace(const std::string& path, InputStream& in) {
  proto::Workload w;
  TraceBuilder builder(path, w);
  auto& prov = *w.mutable_provenance();
  bool has_schema = false, has_nodes = false;
  auto on_node = [&](element node, size_t index, size_t at) -> Status {
    auto where = [&] { return path + ":byte " + std::to_string(at) + ": node #" + std::to_string(index); };
    if (node.type() != element_type::OBJECT) return Status::InvalidInput(where() + " is not an object");
    try {
      builder.AddNode(node);
    } catch (const simdjson::simdjson_error& e) {
      return Status::InvalidInput(where() + ": unexpected value (" + e.what() + ")");
    } catch (const NodeError& e) {
      return Status::InvalidInput(where() + ": " + e.message);
    }
    return Status::Ok();
  };
  bool is_kineto = false;
  auto on_member = [&](std::string_view key, element v, size_t at) -> Status {
    std::string_view s;
    if (key == "schema") {
      if (v.get(s) != simdjson::SUCCESS)
        return Status::InvalidInput(path + ":byte " + std::to_string(at) + ": \"schema\" is not a string");
      prov.set_schema(std::string(s));
      has_schema = true;
    } else if (key == "pid") {
      int64_t pid;
      if (v.get(pid) == simdjson::SUCCESS) prov.set_pid(pid);
    } else if (key == "time") {
      if (v.get(s) == simdjson::SUCCESS) prov.set_trace_time(std::string(s));
    } else if (key == "traceEvents") {
      is_kineto = true;
    }
    return Status::Ok();
  };
  MIMIC_RETURN_IF_ERROR(WalkTopLevelObject(path, in, "nodes", on_node, on_member, &has_nodes));
  if (!has_nodes && is_kineto)
    return Status::InvalidInput(path +
                                ":byte 0: not a PyTorch execution trace but a Kineto trace "
                                "(\"traceEvents\"): give it with --kineto beside its execution "
                                "trace (a Kineto trace alone cannot be replayed: it records no "
                                "tensors)");
  if (!has_nodes || !has_schema)
    return Status::InvalidInput(path + ":byte 0: valid JSON but not a PyTorch execution trace (no " +
                                std::string(has_nodes ? "\"schema\"" : "\"nodes\"") + " member)");
  if (!IsKnownSchema(prov.schema()))
    prov.add_warnings("unknown execution trace schema \"" + prov.schema() + "\": read best-effort");
  MIMIC_RETURN_IF_ERROR(builder.Finish());
  return w;
}

}  // namespace mimic::eg
