#pragma once
// The transformation toolkit in one include: subgraph rewriting, retracing,
// the standard passes and their manager, the debugging aids and the exports.
// <fx/fx.h> is the core (IR, tracing, GraphModule, runtime); this is on top.

#include <fx/codegen/cpp_export.h>
#include <fx/codegen/to_folder.h>
#include <fx/graph_appending_tracer.h>
#include <fx/passes/annotate_types_with_schema.h>
#include <fx/passes/const_fold.h>
#include <fx/passes/cse.h>
#include <fx/passes/dead_code_elimination.h>
#include <fx/passes/fuse.h>
#include <fx/passes/graph_drawer.h>
#include <fx/passes/normalize_args.h>
#include <fx/passes/normalize_operators.h>
#include <fx/passes/operator_schemas.h>
#include <fx/passes/pass_manager.h>
#include <fx/passes/pass_registry.h>
#include <fx/passes/print_tabular.h>
#include <fx/passes/remove_dropout.h>
#include <fx/passes/shape_prop.h>
#include <fx/passes/split_module.h>
#include <fx/passes/subgraph_matcher.h>
#include <fx/subgraph_rewriter.h>
