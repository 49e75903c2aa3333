// The conversion table: every argument type the schemas of real traces use, built from the
// values traces record (execution traces, Kineto's concrete inputs), checked directly; and every
// argument of every operator registered in this LibTorch buildable, but for a named few.
#include "mimic/ops/dispatch.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>
#include <c10/core/Layout.h>
#include <c10/core/MemoryFormat.h>
#include <torch/csrc/jit/frontend/function_schema_parser.h>

#include <set>

#include "mimic/eg/op_class.h"
#include "testing.h"

namespace mimic::ops {
namespace {

// The portable equivalents of vendor ops (eg/op_class.h) name operators of this LibTorch, with
// one value per argument, and the vendor ops are this LibTorch's, with fewer or as many outputs
// as the record keeps.
TEST(PortableTable, SchemasResolveInThisLibTorch) {
  for (const eg::PortableEquivalent& e : eg::PortableEquivalents()) {
    SCOPED_TRACE(std::string(e.vendor));
    Result<c10::OperatorHandle> h = ResolveOperator(std::string(e.schema));
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    EXPECT_EQ(h->schema().arguments().size(), e.args.size());
    EXPECT_EQ(h->schema().returns().size(), e.outputs.size());
    auto vendor = c10::Dispatcher::singleton().findOp({std::string(e.vendor), ""});
    ASSERT_TRUE(vendor.has_value());
    for (int out : e.outputs) EXPECT_LT(out, static_cast<int>(vendor->schema().returns().size()));
  }
}

using ::testing::HasSubstr;

// One op of `schema` with `inputs` and one float output of 8 elements, in a workload of its own.
struct OneOp {
  proto::Workload w;
  proto::Op op;
  c10::FunctionSchema schema;

  OneOp(const std::string& s, std::vector<proto::Value> inputs)
      : schema(torch::jit::parseSchema(s)) {
    w.add_types("");
    for (int k = 0; k < 3; ++k) {  // entries 0..2: tensors of 8 floats
      proto::Tensor* t = w.add_tensors();
      t->set_tensor_id(k + 1);
      t->set_storage_id(k + 1);
      t->set_numel(8);
      t->set_itemsize(4);
      t->set_dtype(proto::FLOAT32);
      t->add_shape(8);
    }
    for (proto::Value& v : inputs) *op.add_inputs() = std::move(v);
    op.add_outputs()->set_tensor(2);
  }

  Result<CompiledArgs> Compile(c10::Device device = c10::Device(c10::kCPU)) {
    return CompileArgs(op, w, schema, device);
  }
};

proto::Value Int(int64_t i) {
  proto::Value v;
  v.set_int_value(i);
  return v;
}
proto::Value Dbl(double d) {
  proto::Value v;
  v.set_double_value(d);
  return v;
}
proto::Value Str(const std::string& s) {
  proto::Value v;
  v.set_string_value(s);
  return v;
}
proto::Value Tensor(int entry) {
  proto::Value v;
  v.set_tensor(entry);
  return v;
}
proto::Value None() {
  proto::Value v;
  v.set_none(true);
  return v;
}
proto::Value Opaque(const std::string& s) {
  proto::Value v;
  v.set_opaque(s);
  return v;
}
proto::Value List(std::vector<proto::Value> items) {
  proto::Value v;
  for (proto::Value& i : items) *v.mutable_list()->add_items() = std::move(i);
  return v;
}

// AdamW with foreach=True (the default on CUDA): _foreach_div_(Tensor[], Scalar[]), recorded as
// GenericList[Double,...].
TEST(ConversionTable, ScalarListsFromRecordedDoubles) {
  OneOp o("aten::_foreach_div_.ScalarList(Tensor(a!)[] self, Scalar[] scalars) -> ()",
          {List({Tensor(0), Tensor(1)}), List({Dbl(0.5), Dbl(0.25)})});
  auto args = o.Compile();
  ASSERT_THAT(args, IsOk());
  ASSERT_EQ(args->stack.size(), 2u);
  const c10::IValue& scalars = args->stack[1];
  ASSERT_TRUE(scalars.isList());
  const std::vector<c10::Scalar> values = scalars.to<std::vector<c10::Scalar>>();
  ASSERT_EQ(values.size(), 2u);
  EXPECT_DOUBLE_EQ(values[1].toDouble(), 0.25);
  ASSERT_EQ(args->tensors.size(), 2u);  // both list items are tensor slots of argument 0
  EXPECT_EQ(args->tensors[1].arg, 0);
  EXPECT_EQ(args->tensors[1].item, 1);
  EXPECT_EQ(args->tensors[1].entry, 1);
  EXPECT_EQ(args->list_args, std::vector<int32_t>{0});
}

TEST(ConversionTable, OptionalListsAndTensorLists) {
  OneOp o("aten::index.Tensor(Tensor self, Tensor?[] indices) -> Tensor",
          {Tensor(0), List({None(), Tensor(1)})});
  auto args = o.Compile();
  ASSERT_THAT(args, IsOk());
  ASSERT_TRUE(args->stack[1].isOptionalTensorList());
  EXPECT_EQ(args->stack[1].toOptionalTensorList().size(), 2u);
  ASSERT_EQ(args->tensors.size(), 2u);
  EXPECT_EQ(args->tensors[1].item, 1);

  OneOp sum(
      "aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? "
      "dtype=None) -> Tensor",
      {Tensor(0), None(), Int(1)});
  auto sargs = sum.Compile();
  ASSERT_THAT(sargs, IsOk());
  EXPECT_TRUE(sargs->stack[1].isNone());
  EXPECT_TRUE(sargs->stack[2].toBool());  // a bool recorded as an int
  EXPECT_TRUE(sargs->stack[3].isNone());  // not recorded: the schema's default

  OneOp with_dims(
      "aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? "
      "dtype=None) -> Tensor",
      {Tensor(0), Int(0)});  // one int for an int[1]
  auto dargs = with_dims.Compile();
  ASSERT_THAT(dargs, IsOk());
  EXPECT_EQ(dargs->stack[1].toIntVector(), std::vector<int64_t>{0});
}

TEST(ConversionTable, EnumsByNumberAndByName) {
  const std::string schema =
      "aten::empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
      "Device? device=None, "
      "bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor";
  OneOp numbers(schema,
                {List({Int(2)}), Int(static_cast<int64_t>(c10::kBFloat16)), Int(0), Str("cuda:1"),
                 proto::Value(), Int(static_cast<int64_t>(c10::MemoryFormat::ChannelsLast))});
  numbers.op.mutable_inputs(4)->set_bool_value(true);
  auto a = numbers.Compile();
  ASSERT_THAT(a, IsOk());
  EXPECT_EQ(a->stack[1].toInt(), static_cast<int64_t>(c10::kBFloat16));
  EXPECT_EQ(a->stack[3].toDevice(),
            c10::Device(c10::kCPU));   // a recorded GPU remapped to the replay's
  EXPECT_FALSE(a->stack[4].toBool());  // pinned memory needs a GPU driver
  EXPECT_EQ(a->stack[5].toInt(), static_cast<int64_t>(c10::MemoryFormat::ChannelsLast));

  OneOp names(schema, {List({Int(2)}), Str("torch.bfloat16"), Str("torch.strided"), Str("cpu"),
                       None(), Str("torch.channels_last")});
  auto b = names.Compile();
  ASSERT_THAT(b, IsOk());
  EXPECT_EQ(b->stack[1].toInt(), static_cast<int64_t>(c10::kBFloat16));
  EXPECT_EQ(b->stack[2].toInt(), static_cast<int64_t>(c10::kStrided));
  EXPECT_EQ(b->stack[5].toInt(), static_cast<int64_t>(c10::MemoryFormat::ChannelsLast));

  OneOp bad(schema, {List({Int(2)}), Str("torch.float99")});
  EXPECT_THAT(bad.Compile(), StatusIs(StatusCode::kUnsupported));
}

TEST(ConversionTable, DimnamesStringsStreamsGenerators) {
  OneOp dimnames(
      "aten::sum.dim_DimnameList(Tensor self, Dimname[1] dim, bool keepdim=False, *, ScalarType? "
      "dtype=None) -> Tensor",
      {Tensor(0), List({Str("N")})});
  auto d = dimnames.Compile();
  ASSERT_THAT(d, IsOk());
  ASSERT_TRUE(d->stack[1].isList());
  EXPECT_EQ(d->stack[1].toListRef()[0].toStringRef(), "N");

  OneOp stream("aten::record_stream(Tensor(a!) self, Stream s) -> ()",
               {Tensor(0), Opaque("<Stream>")});
  auto s = stream.Compile();
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->stack[1].toStream(), c10::Stream(c10::Stream::DEFAULT, c10::Device(c10::kCPU)));

  OneOp dropout(
      "aten::bernoulli_.float(Tensor(a!) self, float p=0.5, *, Generator? generator=None) -> "
      "Tensor(a!)",
      {Tensor(0), Dbl(0.1), Opaque("<Generator>")});
  auto g = dropout.Compile();
  ASSERT_THAT(g, IsOk());
  EXPECT_TRUE(g->stack[2].isNone());  // the device's default generator
}

TEST(ConversionTable, StoragesFromTheRecordedTensorOrSizedForTheOutput) {
  const std::string schema =
      "aten::set_.source_Storage(Tensor(a!) self, Storage source) -> Tensor(a!)";
  OneOp from_tensor(schema, {Tensor(0), Tensor(1)});
  auto a = from_tensor.Compile();
  ASSERT_THAT(a, IsOk());
  ASSERT_EQ(a->tensors.size(), 2u);
  EXPECT_TRUE(a->tensors[1].storage);
  EXPECT_EQ(a->tensors[1].entry, 1);

  OneOp opaque(schema, {Tensor(0), Opaque("<Storage>")});
  auto b = opaque.Compile();
  ASSERT_THAT(b, IsOk());
  ASSERT_TRUE(b->stack[1].isStorage());
  EXPECT_GE(b->stack[1].toStorage().nbytes(), 32u);  // the recorded output: 8 floats
  EXPECT_TRUE(b->stack[1].toStorage().device().is_cpu());

  // Fresh memory lives on the replay's device (a CUDA tensor cannot take a host storage).
  auto on_meta = opaque.Compile(c10::Device(c10::kMeta));
  ASSERT_THAT(on_meta, IsOk());
  EXPECT_TRUE(on_meta->stack[1].toStorage().device().is_meta());
}

// torch.ones(n) under torch.set_default_device("cuda") records device=None (or nothing) and
// makes its output on the GPU: the replay's device stands for the default device there, and
// only there.
TEST(ConversionTable, AFactoryGivenNoDeviceMakesItsOutputWhereTheTraceDid) {
  const std::string schema =
      "aten::ones(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? "
      "device=None, bool? pin_memory=None) -> Tensor";
  const c10::Device meta(c10::kMeta);
  OneOp given_none(schema, {List({Int(8)}), None(), None(), None(), None()});
  OneOp not_recorded(schema, {List({Int(8)})});
  for (OneOp* op : {&given_none, &not_recorded}) {
    op->w.mutable_tensors(2)->set_device("cpu");
    auto host = op->Compile(meta);
    ASSERT_THAT(host, IsOk());
    EXPECT_TRUE(host->stack[3].isNone());
    // A job run on the host, replayed where the host is remapped: the replay's device.
    auto remapped = CompileArgs(op->op, op->w, op->schema, meta, /*remap_host_devices=*/true);
    ASSERT_THAT(remapped, IsOk());
    EXPECT_EQ(remapped->stack[3].toDevice(), meta);

    op->w.mutable_tensors(2)->set_device("cuda:0");
    auto gpu = op->Compile(meta);
    ASSERT_THAT(gpu, IsOk());
    EXPECT_EQ(gpu->stack[3].toDevice(), meta);
    EXPECT_TRUE(gpu->stack[1].isNone());  // dtype: only the device follows the output
  }
}

TEST(ConversionTable, FillStackPutsEachCallsTensorsInPlace) {
  OneOp o("aten::_foreach_add_.List(Tensor(a!)[] self, Tensor[] other, *, Scalar alpha=1) -> ()",
          {List({Tensor(0), Tensor(1)}), List({Tensor(2), Tensor(2)})});
  auto args = o.Compile();
  ASSERT_THAT(args, IsOk());
  const std::vector<at::Tensor> tensors = {at::zeros({8}), at::ones({8}), at::full({8}, 2.0)};
  torch::jit::Stack stack;
  FillStack(
      *args, [&](size_t k) { return tensors[args->tensors[k].entry]; }, &stack);
  ASSERT_EQ(stack.size(), 3u);
  EXPECT_TRUE(stack[0].toTensorList().get(1).equal(tensors[1]));
  EXPECT_TRUE(stack[1].toTensorList().get(0).equal(tensors[2]));
  // The compiled lists were copied, not filled: the next call starts from placeholders again.
  EXPECT_FALSE(args->stack[0].toTensorList().get(1).defined());
}

TEST(ConversionTable, AValueThatCannotTakeItsTypeNamesTheArgument) {
  OneOp o("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
          {Tensor(0), Str("x")});
  auto args = o.Compile();
  EXPECT_THAT(args, StatusIs(StatusCode::kUnsupported));
  EXPECT_THAT(args.status().message(), HasSubstr("argument 'other'"));
}

// Every argument of every operator this LibTorch registers can be built from a recorded value,
// but for script objects (packed weights, c10d's ProcessGroup: a trace records them as
// "<Object>") and c10d's Tensor[][], which Mimic's communication layer stands in for.
TEST(ConversionTable, EveryRegisteredOperatorsArgumentsAreBuildable) {
  std::set<std::string> unbuildable;
  int64_t arguments = 0;
  for (const c10::OperatorName& name : c10::Dispatcher::singleton().getAllOpNames()) {
    auto handle = c10::Dispatcher::singleton().findOp(name);
    if (!handle || !handle->hasSchema()) continue;
    for (const c10::Argument& arg : handle->schema().arguments()) {
      ++arguments;
      if (!IsBuildable(arg.real_type())) unbuildable.insert(arg.real_type()->str());
    }
  }
  EXPECT_GT(arguments, 10000);
  for (const std::string& t : unbuildable) {
    // Script objects (packed weights, c10d's ProcessGroup) and c10d's Tensor[][] outputs.
    const bool expected = t.rfind("__torch__.torch.classes.", 0) == 0 || t == "Tensor[][]";
    EXPECT_TRUE(expected) << "no conversion for argument type " << t;
  }
}

}  // namespace
}  // namespace mimic::ops
