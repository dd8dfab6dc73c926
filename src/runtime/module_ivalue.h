#pragma once
// A module as a runtime value: what get_attr of a whole submodule gives, such
// as the branches and loop bodies that torch.ops.higher_order.cond and
// while_loop take. It travels as a capsule (as slices do), which no ATen
// operator accepts.

#include <fx/module.h>

#include <ATen/core/ivalue.h>

#include <memory>

namespace fx::runtime {

c10::IValue module_ivalue(std::shared_ptr<Module> module);
// The module `v` holds, or nullptr when it holds none.
std::shared_ptr<Module> module_of(const c10::IValue& v);

}  // namespace fx::runtime
