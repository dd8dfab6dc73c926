// fx::passes::PassManager: passes by name and as functions, steps, and the
// checks after each pass (lint, recompile, numerical equivalence).
#include <fx/fx.h>
#include <fx/passes/pass_manager.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

using fx::Value;
using fx::passes::Pass;
using fx::passes::PassContext;
using fx::passes::PassError;
using fx::passes::PassManager;

// relu(linear(x)) plus a dead computation DCE can remove.
struct WithDeadCode : fx::Module {
  std::shared_ptr<fx::nn::Linear> linear;
  WithDeadCode() : fx::Module("WithDeadCode") {
    linear = register_module("linear", std::make_shared<fx::nn::Linear>(4, 4));
  }
  Value forward(const std::vector<Value>& in) override {
    Value unused = in[0] * 2.0;
    (void)unused;
    return fx::call("torch.relu", (*linear)(in[0]));
  }
};

std::unique_ptr<fx::GraphModule> traced() {
  torch::manual_seed(0);
  WithDeadCode m;
  return fx::symbolic_trace(m);
}

// Retargets every call to `from` as `to`: a pass that changes what the
// module computes while keeping a valid graph.
Pass retarget(const std::string& from, const std::string& to) {
  return {"retarget", "test pass", [from, to](fx::GraphModule& gm, const PassContext&) {
            bool changed = false;
            for (fx::Node* n : gm.graph().nodes())
              if (n->op() == fx::Op::call_function && n->target().str() == from) {
                n->set_target(fx::Target(to));
                changed = true;
              }
            return changed;
          }};
}

TEST(PassManager, RunsRegisteredPassesByName) {
  auto gm = traced();
  size_t before = gm->graph().size();
  PassManager pm({"dce"});
  EXPECT_TRUE(pm(*gm).modified);
  EXPECT_EQ(gm->graph().size(), before - 1);
  EXPECT_EQ(gm->code().find("mul"), std::string::npos) << gm->code();
  EXPECT_FALSE(pm(*gm).modified);  // nothing left to remove
}

TEST(PassManager, UnknownNameListsTheRegisteredPasses) {
  try {
    PassManager pm({"no_such_pass"});
    FAIL() << "expected fx::Error";
  } catch (const fx::Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("no_such_pass"), std::string::npos) << msg;
    EXPECT_NE(msg.find("dce"), std::string::npos) << msg;
  }
}

TEST(PassManager, StepsRepeatUntilNothingChanges) {
  auto gm = traced();
  int calls = 0;
  PassManager pm;
  pm.add_pass(Pass{"countdown", "changes twice", [&](fx::GraphModule&, const PassContext&) { return ++calls <= 2; }});
  pm.steps = 10;
  EXPECT_TRUE(pm(*gm).modified);
  EXPECT_EQ(calls, 3);  // two rounds that changed something, one that did not
}

TEST(PassManager, EquivalenceCheckNamesThePassThatChangedTheOutputs) {
  auto gm = traced();
  PassManager pm;
  pm.add_pass("dce").add_pass(retarget("torch.relu", "torch.sigmoid"));
  pm.example_inputs = {torch::randn({3, 4})};
  pm.check_equivalence = true;
  try {
    pm(*gm);
    FAIL() << "expected PassError";
  } catch (const PassError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("pass 'retarget' changed the module's outputs: output: max |expected - actual|"),
              std::string::npos)
        << msg;
  }
}

TEST(PassManager, EquivalenceCheckPassesForPassesThatKeepTheOutputs) {
  auto gm = traced();
  at::Tensor x = torch::randn({3, 4});
  at::Tensor before = gm->run({x}).toTensor();
  PassManager pm({"dce"});
  pm.add_pass(retarget("torch.relu", "torch.nn.functional.relu"));
  pm.example_inputs = {x};
  pm.check_equivalence = true;
  EXPECT_TRUE(pm(*gm).modified);
  EXPECT_TRUE(torch::equal(gm->run({x}).toTensor(), before));
  EXPECT_NE(gm->code().find("torch.nn.functional.relu"), std::string::npos) << gm->code();
}

TEST(PassManager, ChecksNameThePassThatLeftAnUnrunnableGraph) {
  auto gm = traced();
  PassManager pm;
  pm.add_pass(retarget("torch.relu", "torch.no_such_function"));
  pm.run_checks_after_each_pass = true;
  try {
    pm(*gm);
    FAIL() << "expected PassError";
  } catch (const PassError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("after pass 'retarget': the graph is broken"), std::string::npos) << msg;
    EXPECT_NE(msg.find("no_such_function"), std::string::npos) << msg;
  }
}

TEST(PassManager, MisuseIsAnError) {
  auto gm = traced();
  PassManager pm({"dce"});
  pm.check_equivalence = true;  // but no example inputs
  EXPECT_THROW(pm(*gm), fx::Error);
  PassManager zero;
  zero.steps = 0;
  EXPECT_THROW(zero(*gm), fx::Error);
  EXPECT_THROW(zero.add_pass(Pass{"empty", "", nullptr}), fx::Error);
}

TEST(FirstDifference, ComparesStructuresLeafByLeaf) {
  at::Tensor a = torch::ones({2});
  c10::IValue t1 = c10::ivalue::Tuple::create({a, c10::IValue(3)});
  c10::IValue t2 = c10::ivalue::Tuple::create({a.clone(), c10::IValue(3)});
  c10::IValue t3 = c10::ivalue::Tuple::create({a, c10::IValue(4)});
  EXPECT_FALSE(fx::passes::first_difference(t1, t2, 1e-5, 1e-6));
  auto d = fx::passes::first_difference(t1, t3, 1e-5, 1e-6);
  ASSERT_TRUE(d);
  EXPECT_EQ(*d, "output[1]: 4 instead of 3");
  auto shape = fx::passes::first_difference(a, torch::ones({3}), 1e-5, 1e-6);
  ASSERT_TRUE(shape);
  EXPECT_EQ(*shape, "output: shape [3] instead of [2]");
}

}  // namespace
