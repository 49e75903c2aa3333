// Builds small workloads op by op for replay tests: tensors with their storages, ops with their
// schema, inputs, outputs and the streams their kernels ran on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "proto/workload.pb.h"

namespace mimic::testing {

class WorkloadBuilder {
 public:
  WorkloadBuilder() {
    w_.mutable_format()->set_major(1);
    w_.add_types("");
  }

  // A float tensor of `shape` on its own storage; returns its table entry.
  int Tensor(std::vector<int64_t> shape, proto::DType dtype = proto::FLOAT32,
             int64_t itemsize = 4) {
    proto::Tensor* t = w_.add_tensors();
    t->set_tensor_id(next_id_);
    t->set_storage_id(next_id_++);
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;
    t->set_numel(numel);
    t->set_itemsize(itemsize);
    t->set_dtype(dtype);
    int64_t stride = 1;
    std::vector<int64_t> strides(shape.size());
    for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i)
      strides[i] = stride, stride *= shape[i];
    for (size_t i = 0; i < shape.size(); ++i) {
      t->add_shape(shape[i]);
      t->add_strides(strides[i]);
    }
    t->set_device("cuda:0");
    t->set_type(Type("Tensor(float)"));
    return w_.tensors_size() - 1;
  }

  static proto::Value T(int entry) {
    proto::Value v;
    v.set_tensor(entry);
    return v;
  }
  static proto::Value I(int64_t i) {
    proto::Value v;
    v.set_int_value(i);
    return v;
  }

  // An op under the last Step() (or a root); `stream` >= 0 gives it one kernel on that stream.
  proto::Op& Op(const std::string& schema, std::vector<proto::Value> inputs,
                std::vector<proto::Value> outputs, int64_t stream = -1) {
    proto::Op* op = w_.add_ops();
    op->set_id(next_op_id_++);
    op->set_name(schema.substr(0, schema.find_first_of(".(")));
    op->set_schema(Schema(schema));
    op->set_parent(step_op_);
    op->set_thread(1);
    for (proto::Value& v : inputs) *op->add_inputs() = std::move(v);
    for (proto::Value& v : outputs) *op->add_outputs() = std::move(v);
    if (stream >= 0) {
      proto::Kernel* k = op->add_kernels();
      k->set_name("kernel");
      k->set_category("kernel");
      k->set_stream(stream);
    }
    return *op;
  }

  // Opens ProfilerStep#`n`: the ops added after it are its children.
  void Step(int64_t n) {
    proto::Op* op = w_.add_ops();
    op->set_id(next_op_id_++);
    op->set_name("ProfilerStep#" + std::to_string(n));
    op->set_schema(-1);
    op->set_thread(1);
    step_op_ = op->id();
    proto::Segment* seg = w_.add_segments();
    seg->set_kind(proto::Segment::ITERATION);
    seg->set_name(op->name());
    seg->set_op_id(op->id());
    seg->set_step(n);
  }

  const proto::Workload& workload() const { return w_; }

 private:
  int Schema(const std::string& s) {
    for (int i = 0; i < w_.schemas_size(); ++i)
      if (w_.schemas(i) == s) return i;
    w_.add_schemas(s);
    return w_.schemas_size() - 1;
  }
  int Type(const std::string& s) {
    for (int i = 0; i < w_.types_size(); ++i)
      if (w_.types(i) == s) return i;
    w_.add_types(s);
    return w_.types_size() - 1;
  }

  proto::Workload w_;
  int64_t next_id_ = 1;
  int64_t next_op_id_ = 1;
  int64_t step_op_ = 0;
};

}  // namespace mimic::testing
