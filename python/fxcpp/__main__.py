"""python3 -m fxcpp: GraphModule files from the command line.

    python3 -m fxcpp export torchvision.models.resnet18 -o resnet18.fxg --example 1,3,224,224
    python3 -m fxcpp export my_model.py:Net -o net.fxg
    python3 -m fxcpp import resnet18.fxg [--graph | --code]
"""
import argparse
import importlib
import importlib.util
import sys


def _model(spec):
    """An nn.Module from `package.module.factory` or `file.py:Factory` (called with no arguments)."""
    if ':' in spec:
        path, name = spec.rsplit(':', 1)
        loader = importlib.util.spec_from_file_location('fxcpp_user_model', path)
        if loader is None:
            raise SystemExit(f'fxcpp export: cannot load {path}')
        module = importlib.util.module_from_spec(loader)
        loader.loader.exec_module(module)
    else:
        module_name, _, name = spec.rpartition('.')
        module = importlib.import_module(module_name)
    return getattr(module, name)()


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python3 -m fxcpp', description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest='command', required=True)
    export = sub.add_parser('export', help='trace a model with torch.fx and write its GraphModule file')
    export.add_argument('model', help='package.module.factory or file.py:Factory, called with no arguments')
    export.add_argument('-o', '--output', required=True, help='the file to write (.fxg)')
    export.add_argument('--example', metavar='SHAPE',
                        help='record tensor_meta with ShapeProp on a random input of this shape (1,3,224,224)')
    export.add_argument('--train', action='store_true', help='keep the model in training mode (default: eval)')
    export.add_argument('--seed', type=int, default=0, help='torch.manual_seed before the model is built (default 0)')
    imp = sub.add_parser('import', help='read a GraphModule file into torch.fx and print it')
    imp.add_argument('file')
    what = imp.add_mutually_exclusive_group()
    what.add_argument('--graph', action='store_true', help='print the graph')
    what.add_argument('--code', action='store_true', help='print the generated code')
    args = parser.parse_args(argv)

    import torch
    import torch.fx
    from . import format as fxfile

    try:
        if args.command == 'export':
            torch.manual_seed(args.seed)  # the same random weights on every run
            model = _model(args.model)
            model.train(args.train)
            gm = model if isinstance(model, torch.fx.GraphModule) else torch.fx.symbolic_trace(model)
            if args.example:
                from torch.fx.passes.shape_prop import ShapeProp
                ShapeProp(gm).propagate(torch.randn(*(int(d) for d in args.example.split(','))))
            fxfile.save(gm, args.output)
        else:
            gm = fxfile.load(args.file)
            print(gm.graph if args.graph else gm.code if args.code else gm)
    except (ValueError, OSError, RuntimeError) as e:
        print(f'fxcpp {args.command}: {e}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
