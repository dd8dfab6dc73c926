// Tracer::record_stack_traces: nodes carry the C++ frames of the model code
// that made them (this executable exports its symbols: ENABLE_EXPORTS).
#include <fx/fx.h>
#include <fx/tracer.h>
#include <gtest/gtest.h>

// Not in an anonymous namespace: functions with internal linkage are not
// exported, so a backtrace cannot name them.
namespace stack_trace_test {

struct StackTraced : fx::Module {
  StackTraced() : fx::Module("StackTraced") {}
  fx::Value forward(const std::vector<fx::Value>& in) override { return in[0].relu() + 1; }
};

TEST(StackTrace, RecordedWhenAsked) {
  StackTraced m;
  fx::Tracer tracer;
  tracer.record_stack_traces = true;
  auto g = tracer.trace(m);
  int checked = 0;
  for (fx::Node* n : g->nodes()) {
    if (n->op() != fx::Op::call_method && n->op() != fx::Op::call_function) continue;
    const std::string* st = n->meta().get<std::string>("stack_trace");
    ASSERT_NE(st, nullptr) << n->name();
    EXPECT_NE(st->find("StackTraced::forward"), std::string::npos) << n->name() << ":\n" << *st;
    EXPECT_EQ(st->find("fx::Tracer::"), std::string::npos) << *st;  // fxcpp's own frames are left out
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

TEST(StackTrace, OffByDefault) {
  StackTraced m;
  auto g = fx::symbolic_trace_graph(m);
  for (fx::Node* n : g->nodes()) EXPECT_EQ(n->meta().get<std::string>("stack_trace"), nullptr) << n->name();
}

}  // namespace stack_trace_test
