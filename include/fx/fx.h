#pragma once
// fxcpp: PyTorch FX in C++. This header includes the whole public API.

#include <fx/argument.h>
#include <fx/capture.h>
#include <fx/compile.h>
#include <fx/error.h>
#include <fx/graph.h>
#include <fx/graph_module.h>
#include <fx/interpreter.h>
#include <fx/meta.h>
#include <fx/module.h>
#include <fx/module_spec.h>
#include <fx/nn.h>
#include <fx/node.h>
#include <fx/runtime.h>
#include <fx/target.h>
#include <fx/tracer.h>
#include <fx/transformer.h>
#include <fx/value.h>
#include <fx/wrap.h>
