// Every model of the corpus through the pass manager: remove_dropout, fuse,
// cse, dce and shape_prop in a row, with the outputs checked allclose to the
// original's after each pass (PassManager::check_equivalence).
#include <fx/fx.h>
#include <fx/models/alexnet.h>
#include <fx/models/batch_norm_statistics.h>
#include <fx/models/densenet.h>
#include <fx/models/mobilenetv2.h>
#include <fx/models/resnet.h>
#include <fx/models/shufflenetv2.h>
#include <fx/models/squeezenet.h>
#include <fx/models/vgg.h>
#include <fx/models/vision_transformer.h>
#include <fx/passes.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>

namespace {

struct Case {
  std::string name;
  std::function<std::shared_ptr<fx::Module>()> build;
  std::vector<int64_t> input_shape;
  bool has_batch_norm;
};

std::vector<Case> cases() {
  const std::vector<int64_t> image = {2, 3, 64, 64};
  return {
      {"resnet18", [] { return fx::models::resnet18(); }, image, true},
      {"resnet50", [] { return fx::models::resnet50(); }, image, true},
      {"alexnet", [] { return fx::models::alexnet(); }, image, false},
      {"vgg11", [] { return fx::models::vgg11(); }, image, false},
      {"squeezenet1_0", [] { return fx::models::squeezenet1_0(); }, image, false},
      {"shufflenet_v2_x1_0", [] { return fx::models::shufflenet_v2_x1_0(); }, image, true},
      {"mobilenet_v2", [] { return fx::models::mobilenet_v2(); }, image, true},
      {"densenet121", [] { return fx::models::densenet121(); }, image, true},
      {"vit",
       [] { return std::make_shared<fx::models::VisionTransformer>(32, 8, 2, 4, 64, 128, 0.1, 0.1, 10); },
       {2, 3, 32, 32},
       false},
  };
}

class Pipeline : public ::testing::TestWithParam<Case> {};

TEST_P(Pipeline, EveryPassKeepsTheOutputs) {
  const Case& c = GetParam();
  torch::manual_seed(0);
  std::shared_ptr<fx::Module> model = c.build();
  fx::models::randomize_batch_norm_statistics(*model);
  model->eval();
  auto gm = fx::symbolic_trace(*model);
  at::Tensor x = torch::randn(c.input_shape);
  at::Tensor want = (*model)(x).tensor();

  fx::passes::PassManager pm({"remove_dropout", "fuse", "cse", "dce", "shape_prop"});
  pm.example_inputs = {x};
  pm.check_equivalence = true;
  pm.rtol = 1e-4;
  pm.atol = 1e-4;
  fx::passes::PassResult result = pm(*gm);  // throws PassError naming a pass that changed the outputs

  // Every corpus model has BatchNorm to fold or Dropout to remove.
  EXPECT_TRUE(result.modified) << c.name;
  EXPECT_EQ(gm->code().find("dropout"), std::string::npos) << gm->code();
  if (c.has_batch_norm) EXPECT_EQ(gm->code().find("bn"), std::string::npos) << gm->code();
  EXPECT_NO_THROW(gm->graph().lint());
  EXPECT_TRUE(torch::allclose(gm->run({x}).toTensor(), want, 1e-4, 1e-4)) << c.name;
  const fx::Node* last = gm->graph().output_node()->args()[0].node();
  ASSERT_NE(last, nullptr);
  EXPECT_TRUE(last->meta().contains("tensor_meta")) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Corpus, Pipeline, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

}  // namespace
