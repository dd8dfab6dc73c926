#pragma once
// fx::nn: the standard torch.nn modules as fx::Modules, with PyTorch's
// parameter and buffer names, constructor arguments, initialization and repr,
// so that state dicts interchange with Python (fx/state_dict.h). They are
// leaf modules: tracing records them as one call_module node (containers
// excepted). Their forwards are written with fx::Values as torch.nn writes
// them in Python, and run eagerly on LibTorch.

#include <fx/nn/standard_module.h>

#include <fx/nn/activation.h>
#include <fx/nn/attention.h>
#include <fx/nn/container.h>
#include <fx/nn/conv.h>
#include <fx/nn/dropout.h>
#include <fx/nn/embedding.h>
#include <fx/nn/init.h>
#include <fx/nn/linear.h>
#include <fx/nn/module_traits.h>
#include <fx/nn/normalization.h>
#include <fx/nn/pooling.h>
#include <fx/nn/rnn.h>
#include <fx/nn/shape.h>
#include <fx/nn/transformer.h>
