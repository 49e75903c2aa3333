// Execution trace reader. The top-level object and the `nodes` array are walked with
// JsonScanner; each node is then parsed on its own by simdjson's DOM parser and converted into
// proto ops, so memory stays near the size of the JSON text itself.

#include "mimic/eg/execution_trace.h"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

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

// key == literal, as a length check and a few loads: string_view's operator== stays out of line
// in the large functions below, where it calls memcmp for every key of every node.
template <size_t N>
[[gnu::always_inline]] inline bool Is(std::string_view key, const char (&literal)[N]) {
  return key.size() == N - 1 && std::memcmp(key.data(), literal, N - 1) == 0;
}

bool IsTensorType(std::string_view type) { return type.substr(0, 6) == "Tensor"; }

// The element types of a container type, one per Next(): "GenericList[Int,Tensor(float)]" gives
// "Int", then "Tensor(float)", then "Tensor(float)" again for every further element. A type that
// is not a container gives "" throughout.
class ContainerArgs {
 public:
  explicit ContainerArgs(std::string_view type) {
    const size_t open = type.find('[');
    if (open == std::string_view::npos || type.back() != ']') return;
    rest_ = type.substr(open + 1, type.size() - open - 2);
    more_ = !rest_.empty();
  }
  std::string_view Next() {
    if (!more_) return last_;
    int depth = 0;
    size_t i = 0;
    for (; i < rest_.size(); ++i) {
      const char c = rest_[i];
      if (c == '[' || c == '(' || c == '<') ++depth;
      if (c == ']' || c == ')' || c == '>') --depth;
      if (c == ',' && depth == 0) break;
    }
    last_ = rest_.substr(0, i);
    more_ = i + 1 < rest_.size();  // an argument follows the comma
    rest_ = more_ ? rest_.substr(i + 1) : std::string_view();
    return last_;
  }

 private:
  std::string_view rest_;  // the arguments not read yet
  std::string_view last_;
  bool more_ = false;
};

int64_t AsInt(element e) {
  int64_t i;
  switch (e.type()) {
    case element_type::INT64: return int64_t(e);
    case element_type::UINT64: return static_cast<int64_t>(uint64_t(e));
    case element_type::DOUBLE:
      if (!TruncateToInt64(double(e), &i))
        throw simdjson::simdjson_error(simdjson::NUMBER_OUT_OF_RANGE);
      return i;
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

// A hash set of indexes into a table that the caller owns (interned strings, tensors), so that
// no key is stored twice: the caller gives each key's hash and tells whether an index holds
// the key. Open addressing with linear probing over a power-of-two array kept at most half
// full (std::unordered_map divides by a prime on every probe and allocates a node per key).
class IndexSet {
 public:
  // The index that `holds`, else `next`, which is recorded for the key.
  template <typename Holds>
  int32_t FindOrAdd(uint64_t hash, int32_t next, const Holds& holds) {
    if (2 * (size_ + 1) > slots_.size()) Grow();
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      Slot& slot = slots_[i];
      if (slot.index < 0) {
        slot = {hash, next};
        ++size_;
        return next;
      }
      if (slot.hash == hash && holds(slot.index)) return slot.index;
    }
  }

 private:
  struct Slot {
    uint64_t hash = 0;
    int32_t index = -1;
  };
  void Grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(std::max<size_t>(64, 2 * old.size()), Slot{});
    const size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.index < 0) continue;
      size_t i = s.hash & mask;
      while (slots_[i].index >= 0) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }
  std::vector<Slot> slots_;
  size_t size_ = 0;
};

// Interns `s` into `table` (a repeated string field) through `index`.
int32_t Intern(std::string_view s, IndexSet& index,
               google::protobuf::RepeatedPtrField<std::string>* table) {
  const int32_t next = table->size();
  const int32_t id = index.FindOrAdd(std::hash<std::string_view>{}(s), next,
                                     [&](int32_t i) { return table->Get(i) == s; });
  if (id == next) table->Add(std::string(s));
  return id;
}

// Folds `x` into the hash `h` (boost's hash_combine, on 64 bits).
uint64_t Combine(uint64_t h, uint64_t x) {
  return h ^ (x + 0x9e3779b97f4a7c15ULL + (h << 12) + (h >> 4));
}

// MurmurHash3's finalizer: every input bit reaches the low bits that pick the slot.
uint64_t Avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  return h ^ (h >> 33);
}

// Walks a JSON array element by element (dom::array::at(i) would rescan from the start).
class Cursor {
 public:
  Cursor() = default;
  explicit Cursor(element e) {
    simdjson::dom::array a;
    if (e.get_array().get(a) == simdjson::SUCCESS)
      it_ = a.begin(), end_ = a.end(), size_ = a.size(), valid_ = true;
  }
  // How many elements the array holds (0 when it is not an array).
  size_t size() const { return size_; }
  // The next element, or false when there is none.
  bool Next(element* out) {
    if (!valid_ || it_ == end_) return false;
    *out = *it_;
    ++it_;
    return true;
  }

 private:
  simdjson::dom::array::iterator it_, end_;
  size_t size_ = 0;
  bool valid_ = false;
};

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

// A segment begins at `ProfilerStep#N` (an iteration) and at `## label ##` ops.
bool IsSegmentName(std::string_view name) {
  int64_t step = 0;
  if (ParseStepNumber(name, &step)) return true;
  return name.size() > 6 && name.substr(0, 3) == "## " && name.substr(name.size() - 3) == " ##" &&
         name != "## process_group:init ##";
}

// Appends the segment that `op` begins. REQUIRES: IsSegmentName(op.name()).
void AddSegment(proto::Workload& w, const proto::Op& op) {
  proto::Segment& s = *w.add_segments();
  int64_t step = 0;
  const bool iteration = ParseStepNumber(op.name(), &step);
  s.set_kind(iteration ? proto::Segment::ITERATION : proto::Segment::LABEL);
  s.set_name(op.name());
  s.set_op_id(op.id());
  if (iteration) s.set_step(step);
}

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

  void ReadIo(element v, IoJson& io);
  bool ReadIoField(std::string_view key, element v, IoJson& in, IoJson& out);
  bool SetKnownField(std::string_view name, element value, proto::Op& op,
                     std::string_view* tensor_range);
  void ReadAttrs(element attrs, proto::Op& op, std::string_view* tensor_range);
  void ConvertValues(const IoJson& io, google::protobuf::RepeatedPtrField<proto::Value>* out);
  void ConvertValue(element value, std::string_view type, const element* shape,
                    const element* strides, proto::Value* out);
  int32_t InternTensor(element value, std::string_view type, int32_t type_id, const element* shape,
                       const element* strides);
  int32_t DeviceIndex(std::string_view device);
  void AddTensor(std::string_view type, std::string_view device);
  int32_t InternSchema(std::string_view schema);
  void ApplyTensorRange(std::string_view json, proto::Op& op);
  void ReadProcessGroups(const proto::Op& op);
  Status SortOps();

  const std::string& path_;
  proto::Workload& w_;
  IndexSet schema_index_;
  IndexSet type_index_;
  IndexSet device_index_;  // of provenance.devices
  std::string_view last_device_;
  int32_t last_device_index_ = -1;
  IndexSet tensor_index_;
  std::vector<int64_t> key_;           // scratch: the key of the tensor value being read
  std::vector<int64_t> tensor_keys_;   // the tensors' keys, one after another
  std::vector<size_t> key_starts_{0};  // where tensor i's key starts; i + 1's start ends it
  std::vector<std::pair<int64_t, proto::Op*>> order_;  // the ops as added, beside their ids
  std::vector<const proto::Op*> segment_ops_;          // ops that begin a segment
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
    if (Is(key, "id")) {
      op.set_id(AsInt(v));
      has_id = true;
    } else if (Is(key, "name")) {
      op.set_name(std::string(std::string_view(v)));
    } else if (Is(key, "parent") || Is(key, "ctrl_deps")) {
      op.set_parent(AsInt(v));
    } else if (Is(key, "inputs") || Is(key, "outputs")) {
      ReadIo(v, Is(key, "inputs") ? in : out);
    } else if (Is(key, "attrs")) {
      ReadAttrs(v, op, &tensor_range);
    } else if (!ReadIoField(key, v, in, out)) {
      SetKnownField(key, v, op, &tensor_range);  // 1.0.1 keeps attributes at the top level
    }
  }
  if (!has_id) throw NodeError{"node has no \"id\""};
  ConvertValues(in, op.mutable_inputs());
  ConvertValues(out, op.mutable_outputs());
  if (!tensor_range.empty()) ApplyTensorRange(tensor_range, op);
  if (Is(op.name(), "## process_group:init ##")) ReadProcessGroups(op);
  if (IsSegmentName(op.name())) segment_ops_.push_back(&op);
  order_.emplace_back(op.id(), &op);
}

// `inputs` / `outputs`: an object {values, shapes, types, strides} from 1.0.2 on, the values
// alone before.
void TraceBuilder::ReadIo(element v, IoJson& io) {
  if (v.type() != element_type::OBJECT) {
    io.values = v, io.has_values = true;
    return;
  }
  for (auto sub : v.get_object()) {
    if (Is(sub.key, "values"))
      io.values = sub.value, io.has_values = true;
    else if (Is(sub.key, "shapes"))
      io.shapes = sub.value, io.has_shapes = true;
    else if (Is(sub.key, "types"))
      io.types = sub.value, io.has_types = true;
    else if (Is(sub.key, "strides"))
      io.strides = sub.value, io.has_strides = true;
  }
}

// The 1.0.1 top-level keys input_shapes, output_types, ...; false for any other key.
bool TraceBuilder::ReadIoField(std::string_view key, element v, IoJson& in, IoJson& out) {
  if (Is(key, "input_shapes"))
    in.shapes = v, in.has_shapes = true;
  else if (Is(key, "input_types"))
    in.types = v, in.has_types = true;
  else if (Is(key, "input_strides"))
    in.strides = v, in.has_strides = true;
  else if (Is(key, "output_shapes"))
    out.shapes = v, out.has_shapes = true;
  else if (Is(key, "output_types"))
    out.types = v, out.has_types = true;
  else if (Is(key, "output_strides"))
    out.strides = v, out.has_strides = true;
  else
    return false;
  return true;
}

// An attribute the Op has a field for (a key of a 1.0.1 node, or the name of an attrs entry);
// false when `name` is none of them.
bool TraceBuilder::SetKnownField(std::string_view name, element value, proto::Op& op,
                                 std::string_view* tensor_range) {
  if (Is(name, "rf_id"))
    op.set_rf_id(AsInt(value));
  else if (Is(name, "fw_parent"))
    op.set_fw_parent(AsInt(value));
  else if (Is(name, "seq_id"))
    op.set_seq_id(AsInt(value));
  else if (Is(name, "scope"))
    op.set_scope(AsInt(value));
  else if (Is(name, "tid"))
    op.set_thread(AsInt(value));
  else if (Is(name, "fw_tid"))
    op.set_fw_tid(AsInt(value));
  else if (Is(name, "op_schema"))
    op.set_schema(InternSchema(std::string_view(value)));
  else if (Is(name, "kernel_backend"))
    op.set_kernel_backend(std::string(std::string_view(value)));
  else if (Is(name, "kernel_file"))
    op.set_kernel_file(std::string(std::string_view(value)));
  else if (Is(name, "tensor_range"))
    *tensor_range = std::string_view(value);
  else
    return false;
  return true;
}

// One entry of `attrs`: {"name", "type", "value"}, the first of each when a key repeats.
// Throws simdjson_error as element::operator[] would: INCORRECT_TYPE when the entry is not an
// object or its name not a string, NO_SUCH_FIELD when it has no name or no value.
struct AttrJson {
  std::string_view name, type;
  element value;
};
AttrJson ReadAttr(element attr) {
  simdjson::dom::object fields;
  if (attr.get_object().get(fields) != simdjson::SUCCESS)
    throw simdjson::simdjson_error(simdjson::INCORRECT_TYPE);
  const element* name = nullptr;
  const element* value = nullptr;
  const element* type = nullptr;
  element slots[3];
  for (auto f : fields) {
    if (!name && Is(f.key, "name"))
      name = &(slots[0] = f.value);
    else if (!value && Is(f.key, "value"))
      value = &(slots[1] = f.value);
    else if (!type && Is(f.key, "type"))
      type = &(slots[2] = f.value);
  }
  if (!name) throw simdjson::simdjson_error(simdjson::NO_SUCH_FIELD);
  AttrJson a;
  a.name = name->get_string().value();
  if (!value) throw simdjson::simdjson_error(simdjson::NO_SUCH_FIELD);
  a.value = *value;
  if (!type || type->get_string().get(a.type) != simdjson::SUCCESS) a.type = "";
  return a;
}

void TraceBuilder::ReadAttrs(element attrs, proto::Op& op, std::string_view* tensor_range) {
  for (element entry : attrs.get_array()) {
    const AttrJson attr = ReadAttr(entry);
    if (!SetKnownField(attr.name, attr.value, op, tensor_range))
      ConvertValue(attr.value, attr.type, nullptr, nullptr,
                   &(*op.mutable_attrs())[std::string(attr.name)]);
  }
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
  out->Reserve(out->size() + static_cast<int>(values.size()));
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
  const int32_t type_id = Intern(type, type_index_, w_.mutable_types());
  out->set_type(type_id);
  const element_type kind = value.type();
  if (IsTensorType(type) && kind == element_type::ARRAY) {
    out->set_tensor(InternTensor(value, type, type_id, shape, strides));
    return;
  }
  switch (kind) {
    case element_type::NULL_VALUE: out->set_none(true); return;
    case element_type::BOOL: out->set_bool_value(bool(value)); return;
    case element_type::INT64:
    case element_type::UINT64:
      if (Is(type, "Double") || Is(type, "Float"))
        out->set_double_value(AsDouble(value));
      else out->set_int_value(AsInt(value));
      return;
    case element_type::DOUBLE: out->set_double_value(double(value)); return;
    case element_type::STRING: {
      const std::string_view s = value;
      if (Is(s, "<None>") || Is(type, "None"))
        out->set_none(true);
      else if (Is(s, "<Generator>") || Is(s, "<Object>") || Is(type, "Generator"))
        out->set_opaque(std::string(s));
      else if (Is(type, "Device"))
        out->set_device(std::string(s));
      else if (Is(type, "Double") &&
               (Is(s, "inf") || Is(s, "-inf") || Is(s, "nan") || Is(s, "-nan")))
        out->set_double_value(Is(s, "inf")    ? std::numeric_limits<double>::infinity()
                              : Is(s, "-inf") ? -std::numeric_limits<double>::infinity()
                                              : std::numeric_limits<double>::quiet_NaN());
      else out->set_string_value(std::string(s));
      return;
    }
    case element_type::ARRAY: {
      ContainerArgs args(type);
      proto::ValueList* list = out->mutable_list();
      list->mutable_items()->Reserve(static_cast<int>(value.get_array().size()));
      Cursor shapes, stride_list;
      if (shape) shapes = Cursor(*shape);
      if (strides) stride_list = Cursor(*strides);
      element item_shape, item_stride;
      for (element item : value.get_array()) {
        const std::string_view item_type = args.Next();
        const bool hs = shapes.Next(&item_shape);
        const bool hst = stride_list.Next(&item_stride);
        ConvertValue(item, item_type, hs ? &item_shape : nullptr, hst ? &item_stride : nullptr,
                     list->add_items());
      }
      return;
    }
    case element_type::OBJECT: out->set_opaque(std::string(simdjson::minify(value))); return;
  }
}

// A tensor value is [tensor_id, storage_id, offset, numel, itemsize, device?]. Two values are
// the same tensor when these, the type, the shape and the strides all agree. A tensor's key
// packs them into integers: the five fields, the indexes of the type and of the device (-1 for
// none), then the shape and the strides, each after its length.
enum KeySlot { kTensorId, kStorageId, kOffset, kNumel, kItemsize, kType, kDevice, kShapeSize };

// Appends the count of a JSON array of integers (a shape, strides) and then the integers; a
// count of 0 when `e` is absent or not an array.
void AppendInts(const element* e, std::vector<int64_t>* key) {
  const size_t count_at = key->size();
  key->push_back(0);
  if (e && e->type() == element_type::ARRAY)
    for (element d : e->get_array()) key->push_back(AsInt(d));
  (*key)[count_at] = static_cast<int64_t>(key->size() - count_at - 1);
}

int32_t TraceBuilder::InternTensor(element value, std::string_view type, int32_t type_id,
                                   const element* shape, const element* strides) {
  const simdjson::dom::array fields = value.get_array();
  const size_t n = fields.size();
  if (n < 5)
    throw NodeError{"tensor value with " + std::to_string(n) + " fields (expected 5 or 6)"};
  std::vector<int64_t>& key = key_;
  key.clear();
  auto field = fields.begin();
  for (int i = 0; i < 5; ++i, ++field) key.push_back(AsInt(*field));
  std::string_view device;
  if (n >= 6) device = (*field).get_string();
  // An undefined tensor: typed "Tensor(nullptr (uninitialized))", or all zeros with no type. A
  // sparse tensor has no storage either ([id,0,0,0,0,""]) but its dtype: it is a tensor.
  if (key[kNumel] == 0 && key[kItemsize] == 0 && key[kStorageId] == 0 &&
      (type.find("nullptr") != std::string_view::npos || (type.empty() && device.empty())))
    return -1;
  if (key[kNumel] < 0 || key[kItemsize] < 0 || key[kOffset] < 0)
    throw NodeError{"tensor " + std::to_string(key[kTensorId]) +
                    " has a negative numel, itemsize or offset"};
  key.push_back(type_id);
  key.push_back(DeviceIndex(device));
  AppendInts(shape, &key);
  AppendInts(strides, &key);
  uint64_t hash = 0;
  for (int64_t x : key) hash = Combine(hash, static_cast<uint64_t>(x));
  const int32_t next = w_.tensors_size();
  const int32_t id = tensor_index_.FindOrAdd(Avalanche(hash), next, [&](int32_t i) {
    const auto begin = tensor_keys_.begin();
    return std::equal(key.begin(), key.end(), begin + key_starts_[i], begin + key_starts_[i + 1]);
  });
  if (id == next) AddTensor(type, device);
  return id;
}

// The index of `device` in provenance.devices, -1 for none. A device seen for the first time is
// a new tensor's, so that the list keeps the order of the tensors. Traces name one device
// almost throughout: the last one is checked first.
int32_t TraceBuilder::DeviceIndex(std::string_view device) {
  if (device.empty()) return -1;
  if (device != last_device_) {
    last_device_index_ = Intern(device, device_index_, w_.mutable_provenance()->mutable_devices());
    last_device_ = w_.provenance().devices(last_device_index_);
  }
  return last_device_index_;
}

// Appends the tensor whose key is key_; throws NodeError when its size cannot be.
void TraceBuilder::AddTensor(std::string_view type, std::string_view device) {
  const std::vector<int64_t>& key = key_;
  const auto dims = key.begin() + kShapeSize + 1;
  const auto dims_end = dims + key[kShapeSize];
  const auto steps = dims_end + 1;
  int64_t elements = 1, bytes = 0;
  for (auto d = dims; d != dims_end; ++d) {
    if (*d < 0)
      throw NodeError{"tensor " + std::to_string(key[kTensorId]) + " has a negative dimension"};
    if (__builtin_mul_overflow(elements, *d, &elements))
      throw NodeError{"tensor " + std::to_string(key[kTensorId]) +
                      " has a shape whose size overflows 64 bits"};
  }
  if (__builtin_mul_overflow(std::max(key[kNumel], elements), key[kItemsize], &bytes) ||
      __builtin_add_overflow(bytes, key[kOffset] * key[kItemsize], &bytes))
    throw NodeError{"tensor " + std::to_string(key[kTensorId]) + " is larger than 2^63 bytes"};
  proto::Tensor& t = *w_.add_tensors();
  t.set_tensor_id(key[kTensorId]);
  t.set_storage_id(key[kStorageId]);
  t.set_offset(key[kOffset]);
  t.set_numel(key[kNumel]);
  t.set_itemsize(key[kItemsize]);
  t.set_device(std::string(device));
  t.set_dtype(DTypeOfTensorType(type));
  t.set_type(static_cast<int32_t>(key[kType]));
  t.mutable_shape()->Add(dims, dims_end);
  t.mutable_strides()->Add(steps, key.end());
  tensor_keys_.insert(tensor_keys_.end(), key.begin(), key.end());
  key_starts_.push_back(tensor_keys_.size());
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

// Puts the ops in id order. The pointers are sorted, not the messages (a message swap copies
// every field), beside their ids, so that comparing does not chase a pointer per op.
Status TraceBuilder::SortOps() {
  auto by_id = [](const auto& a, const auto& b) { return a.first < b.first; };
  if (!std::is_sorted(order_.begin(), order_.end(), by_id)) {
    std::sort(order_.begin(), order_.end(), by_id);
    auto slot = w_.mutable_ops()->pointer_begin();
    for (const auto& entry : order_) *slot++ = entry.second;
  }
  for (size_t i = 1; i < order_.size(); ++i)
    if (order_[i].first == order_[i - 1].first)
      return Status::InvalidInput(path_ + ":node id " + std::to_string(order_[i].first) +
                                  ": duplicate node id " + std::to_string(order_[i].first));
  return Status::Ok();
}

Status TraceBuilder::Finish() {
  MIMIC_RETURN_IF_ERROR(SortOps());
  std::sort(segment_ops_.begin(), segment_ops_.end(),
            [](const proto::Op* a, const proto::Op* b) { return a->id() < b->id(); });
  for (const proto::Op* op : segment_ops_) AddSegment(w_, *op);
  return Status::Ok();
}

}  // namespace

proto::DType DTypeOfScalarTypeName(std::string_view name) {
  for (const auto& d : kDTypes)
    if (d.name == name) return d.dtype;
  return proto::DTYPE_UNKNOWN;
}

void AddTraceSegments(proto::Workload& w) {
  for (const proto::Op& op : w.ops())
    if (IsSegmentName(op.name())) AddSegment(w, op);
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
