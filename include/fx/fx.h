#pragma once
// fxcpp: PyTorch FX in C++. This header includes the whole public API.

#include <fx/argument.h>
#include <fx/error.h>
#include <fx/graph.h>
#include <fx/meta.h>
#include <fx/node.h>
#include <fx/target.h>
