#include <fx/nn/init.h>

namespace fx::nn {

namespace {
thread_local bool skip_init = false;
}  // namespace

SkipInit::SkipInit() : previous_(skip_init) { skip_init = true; }
SkipInit::~SkipInit() { skip_init = previous_; }
bool init_skipped() { return skip_init; }

}  // namespace fx::nn
