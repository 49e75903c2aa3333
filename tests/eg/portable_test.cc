// The table of vendor ops and their portable equivalents (eg/op_class.h): its records are
// well formed, a rewrite maps arguments and outputs as recorded, and a real GPU trace's vendor
// ops all become portable ones for a CPU and stay as they are for a GPU.
#include <set>

#include "mimic/eg/op_class.h"
#include "mimic/eg/schema_args.h"
#include "mimic/eg/workload.h"
#include "testing.h"

namespace mimic::eg {
namespace {

TEST(Portable, EveryRecordNamesItsSchemaAndFillsEveryArgument) {
  std::set<std::string_view> vendors;
  for (const PortableEquivalent& e : PortableEquivalents()) {
    SCOPED_TRACE(std::string(e.vendor));
    EXPECT_TRUE(vendors.insert(e.vendor).second) << "listed twice";
    EXPECT_EQ(e.schema.substr(0, e.portable.size() + 1), std::string(e.portable) + "(");
    EXPECT_EQ(ParseSchemaArgs(std::string(e.schema)).size(), e.args.size());
    EXPECT_GT(e.outputs.size(), 0u);
    // Every spec is one the rewrite understands: an op with enough list inputs rewrites.
    proto::Op op;
    op.set_name(std::string(e.vendor));
    for (int k = 0; k < 16; ++k) {  // as many as the longest vendor schema
      proto::Value* v = op.add_inputs();
      v->mutable_list()->add_items()->set_int_value(k);
      v->mutable_list()->add_items()->set_int_value(k);
    }
    for (int k = 0; k < 5; ++k) op.add_outputs()->set_tensor(k);
    ASSERT_TRUE(RewriteAsPortable(e, &op));
    EXPECT_EQ(op.name(), e.portable);
    EXPECT_EQ(op.inputs_size(), static_cast<int>(e.args.size()));
    EXPECT_EQ(op.outputs_size(), static_cast<int>(e.outputs.size()));
    EXPECT_EQ(ClassOf(e.vendor), ClassOf(e.portable));
  }
}

TEST(Portable, BatchNormBackwardTakesItsArgumentsInNativeOrder) {
  const PortableEquivalent* e = PortableOf("aten::cudnn_batch_norm_backward");
  ASSERT_NE(e, nullptr);
  proto::Op op;
  op.set_name("aten::cudnn_batch_norm_backward");
  for (int k = 0; k < 7; ++k) op.add_inputs()->set_tensor(10 + k);  // input .. save_var
  op.add_inputs()->set_double_value(1e-5);                          // epsilon
  op.add_inputs()->set_tensor(17);                                  // reserveSpace
  for (int k = 0; k < 3; ++k) op.add_outputs()->set_tensor(20 + k);
  ASSERT_TRUE(RewriteAsPortable(*e, &op));
  EXPECT_EQ(op.name(), "aten::native_batch_norm_backward");
  ASSERT_EQ(op.inputs_size(), 10);
  EXPECT_EQ(op.inputs(0).tensor(), 11);  // grad_out was cuDNN's grad_output
  EXPECT_EQ(op.inputs(1).tensor(), 10);  // input
  EXPECT_EQ(op.inputs(6).tensor(), 16);  // save_invstd
  EXPECT_TRUE(op.inputs(7).bool_value());
  EXPECT_DOUBLE_EQ(op.inputs(8).double_value(), 1e-5);
  ASSERT_EQ(op.inputs(9).list().items_size(), 3);
  EXPECT_EQ(op.outputs(2).tensor(), 22);
  EXPECT_EQ(ClassOf("aten::cudnn_batch_norm_backward"), OpClass::kReductionNorm);
}

TEST(Portable, ConvolutionGetsOutputPaddingOfItsRank) {
  proto::Op op;
  op.set_name("aten::cudnn_convolution");
  op.add_inputs()->set_tensor(1);
  op.add_inputs()->set_tensor(2);
  for (int k = 0; k < 3; ++k) {  // padding, stride, dilation of a 3-d convolution
    proto::ValueList* l = op.add_inputs()->mutable_list();
    for (int d = 0; d < 3; ++d) l->add_items()->set_int_value(k + 1);
  }
  op.add_inputs()->set_int_value(4);  // groups
  for (int k = 0; k < 3; ++k) op.add_inputs()->set_bool_value(false);
  op.add_outputs()->set_tensor(3);
  ASSERT_TRUE(RewriteAsPortable(*PortableOf(op.name()), &op));
  ASSERT_EQ(op.inputs_size(), 9);
  EXPECT_TRUE(op.inputs(2).none());
  EXPECT_EQ(op.inputs(3).list().items(0).int_value(), 2);  // stride
  EXPECT_EQ(op.inputs(4).list().items(0).int_value(), 1);  // padding
  ASSERT_EQ(op.inputs(7).list().items_size(), 3);          // output_padding
  EXPECT_EQ(op.inputs(7).list().items(2).int_value(), 0);
  EXPECT_EQ(op.inputs(8).int_value(), 4);
}

TEST(Portable, TooFewRecordedInputsLeaveTheOpAlone) {
  proto::Op op;
  op.set_name("aten::cudnn_batch_norm");
  op.add_inputs()->set_tensor(1);
  EXPECT_FALSE(RewriteAsPortable(*PortableOf(op.name()), &op));
  EXPECT_EQ(op.name(), "aten::cudnn_batch_norm");
  EXPECT_EQ(op.inputs_size(), 1);
}

TEST(Portable, TargetsKeepTheVendorOpsTheyHaveKernelsFor) {
  EXPECT_EQ(PortableOf("aten::addmm"), nullptr);
  const PortableEquivalent* cudnn = PortableOf("aten::cudnn_batch_norm.default");
  const PortableEquivalent* onednn = PortableOf("aten::mkldnn_convolution");
  ASSERT_NE(cudnn, nullptr);
  ASSERT_NE(onednn, nullptr);
  EXPECT_TRUE(VendorOpRunsOn(*cudnn, "cuda:1"));
  EXPECT_FALSE(VendorOpRunsOn(*cudnn, "cpu"));
  EXPECT_TRUE(VendorOpRunsOn(*onednn, "cpu"));
  EXPECT_FALSE(VendorOpRunsOn(*onednn, "cuda"));
}

// embedding_bag's auxiliary outputs are each device kernel's own; its pooled output is not.
TEST(Portable, EmbeddingBagsAuxiliaryOutputsAreTheDevices) {
  for (const char* op : {"aten::embedding_bag", "aten::_embedding_bag.default",
                         "aten::_embedding_bag_forward_only"}) {
    EXPECT_FALSE(OutputShapeIsTheDevices(op, 0)) << op;
    for (int k : {1, 2, 3}) EXPECT_TRUE(OutputShapeIsTheDevices(op, k)) << op << " " << k;
    EXPECT_FALSE(OutputShapeIsTheDevices(op, 4)) << op;
  }
  EXPECT_FALSE(OutputShapeIsTheDevices("aten::embedding", 1));
}

// Counts the ops of `w` whose name has `part`.
int Count(const proto::Workload& w, std::string_view part) {
  int n = 0;
  for (const proto::Op& op : w.ops()) n += op.name().find(part) != std::string::npos;
  return n;
}

// The H200 GPT-2 capture: SDPA ran cuDNN's fused attention, whose backward the autograd thread
// records at the top; for the CPU it is the CPU flash kernel's backward, on the same tensors.
TEST(Portable, CudnnAttentionBackwardBecomesTheCpuFlashBackward) {
  const std::string path = testing::SourceDir() + "/fleet_samples/h200/gpt2.et.json.gz";
  Result<proto::Workload> w = LoadWorkload(path);
  ASSERT_THAT(w, IsOk());
  const std::string vendor = "aten::_scaled_dot_product_cudnn_attention_backward";
  const std::string portable = "aten::_scaled_dot_product_flash_attention_for_cpu_backward";
  const int before = Count(*w, vendor);
  ASSERT_GT(before, 0);
  PortableRewrites done = MakePortable(&*w, "cpu");
  EXPECT_EQ(done[vendor], before);
  EXPECT_EQ(Count(*w, vendor), 0);
  EXPECT_EQ(Count(*w, portable), before);
  for (const proto::Op& op : w->ops()) {
    if (op.name() != portable) continue;
    ASSERT_EQ(op.inputs_size(), 10);
    const proto::Tensor& logsumexp = w->tensors(op.inputs(5).tensor());
    ASSERT_EQ(logsumexp.shape_size(), 4);  // cuDNN's (B, H, L, 1), not q, k, v or out
    EXPECT_EQ(logsumexp.shape(3), 1);
    EXPECT_TRUE(op.inputs(8).has_none());                          // no attention mask
  }
  const Status checked = CheckWorkload(path, *w);
  EXPECT_TRUE(checked.ok()) << checked.ToString();
}

TEST(Portable, GpuResnetTraceBecomesPortableForTheCpu) {
  const std::string path = testing::SharedTraces() + "/param-resnet-1gpu/resnet_1gpu_et.json.gz";
  MIMIC_SKIP_UNLESS_EXISTS(path);
  Result<proto::Workload> w = LoadWorkload(path);
  ASSERT_THAT(w, IsOk());
  const int vendor = Count(*w, "::cudnn_");
  ASSERT_GT(vendor, 0);
  EXPECT_FALSE(NeedsPortable(*w, "cuda"));
  ASSERT_TRUE(NeedsPortable(*w, "cpu"));
  const int native_bn = Count(*w, "aten::native_batch_norm");
  PortableRewrites done = MakePortable(&*w, "cpu");
  int64_t total = 0;
  for (const auto& [name, n] : done) total += n;
  EXPECT_EQ(total, vendor);
  EXPECT_EQ(Count(*w, "::cudnn_"), 0);
  EXPECT_EQ(Count(*w, "aten::native_batch_norm"),
            native_bn + done["aten::cudnn_batch_norm"] + done["aten::cudnn_batch_norm_backward"]);
  const Status checked = CheckWorkload(path, *w);
  EXPECT_TRUE(checked.ok()) << checked.ToString();
  for (const proto::Op& op : w->ops()) {
    if (op.name() == "aten::native_batch_norm_backward") {
      EXPECT_EQ(w->schemas(op.schema()).substr(0, 32), "aten::native_batch_norm_backward");
    }
  }
  const proto::Transformation t = PortableTransformation(done, "cpu");
  EXPECT_EQ(t.params().at("aten::cudnn_convolution"), "aten::convolution");
  EXPECT_EQ(t.params().at("target"), "cpu");
}

// The value domains of eg::InputDomainsOf name, on real captures, inputs that the recorded ops
// have and that are tensors: the table and the traces agree on argument positions. Every
// domain of the table that these captures use is checked (sqrt, _foreach_sqrt, sqrt_, binary
// cross entropy and its backward, with logits).
TEST(OpFacts, InputDomainsNameRecordedTensorArguments) {
  std::set<std::string> seen;
  for (const char* name :
       {"tests/data/data_dependent.et.json.gz", "tests/data/foreach_optimizers.et.json.gz",
        "fleet_samples/embbag_rec.et.json.gz", "fleet_samples/transformer.et.json.gz"}) {
    Result<proto::Workload> w = LoadWorkload(testing::SourceDir() + "/" + name);
    ASSERT_THAT(w, IsOk());
    for (const proto::Op& op : w->ops()) {
      for (const InputDomain& d : InputDomainsOf(op.name())) {
        seen.insert(op.name());
        ASSERT_LT(d.arg, op.inputs_size()) << name << ": " << op.name();
        const proto::Value& v = op.inputs(d.arg);
        const bool tensors = v.kind_case() == proto::Value::kTensor ||
                             (v.kind_case() == proto::Value::kList && v.list().items_size() > 0 &&
                              v.list().items(0).kind_case() == proto::Value::kTensor);
        EXPECT_TRUE(tensors) << name << ": " << op.name() << " input " << d.arg;
      }
    }
  }
  EXPECT_EQ(seen, (std::set<std::string>{"aten::_foreach_sqrt", "aten::binary_cross_entropy",
                                         "aten::binary_cross_entropy_backward",
                                         "aten::binary_cross_entropy_with_logits", "aten::sqrt",
                                         "aten::sqrt_"}));
  EXPECT_TRUE(InputDomainsOf("aten::add.Tensor").empty());
  EXPECT_TRUE(KeepsSign("aten::add.Tensor"));
  EXPECT_FALSE(KeepsSign("aten::pow.Tensor_Scalar"));
  EXPECT_TRUE(ChangesViewMetadata("aten::resize_"));
  EXPECT_FALSE(ChangesViewMetadata("aten::resize"));
  // The op calibrate measures a value-dependent operator by: in place, foreach and overloads
  // name the same one.
  EXPECT_EQ(ValueDependentKind("aten::_foreach_sqrt_"), "sqrt");
  EXPECT_EQ(ValueDependentKind("aten::div_.Tensor"), "div");
  EXPECT_EQ(ValueDependentKind("aten::_foreach_addcdiv_.ScalarList"), "addcdiv");
  EXPECT_EQ(ValueDependentKind("aten::mul_"), "");
}

// The index-op records and the class table agree: every index op is of class embedding, and
// the overload does not matter.
TEST(IndexOps, EveryIndexOpIsOfClassEmbedding) {
  for (const char* name :
       {"aten::index_select", "aten::embedding", "aten::index.Tensor", "aten::gather",
        "aten::scatter_add", "aten::scatter_add_", "aten::index_add", "aten::index_add_",
        "aten::index_put_", "aten::_index_put_impl_", "aten::embedding_backward",
        "aten::embedding_dense_backward", "aten::_embedding_bag_backward",
        "aten::_embedding_bag_dense_backward"}) {
    SCOPED_TRACE(name);
    const IndexOp* r = IndexOpOf(name);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(ClassOf(name), OpClass::kEmbedding);
    EXPECT_FALSE(r->kind.empty());
  }
  EXPECT_EQ(IndexOpOf("aten::_index_put_impl_")->accumulate_arg, 3);
  EXPECT_TRUE(IndexOpOf("aten::gather")->per_element);
  EXPECT_EQ(IndexOpOf("aten::embedding_backward")->table, -1);  // rows: the output's
  EXPECT_EQ(IndexOpOf("aten::embedding_bag"), nullptr);         // the forward bag: the gather model
  EXPECT_EQ(IndexOpOf("aten::add"), nullptr);
}

}  // namespace
}  // namespace mimic::eg
