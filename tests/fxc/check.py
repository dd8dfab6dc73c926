"""fxc end to end, with torch.fx as the reference.

    check.py FXC WORKDIR

A torchvision resnet18 goes through `python3 -m fxcpp export`; then every fxc
command runs on the file: show (graph and code identical to torch.fx's), run
(outputs allclose to PyTorch's, non-tensor outputs too), opt with --verify, draw, export-py (imported
and run by Python), bench; compile runs on a transformer-style block; and malformed input gives one line on stderr and a
non-zero exit code.
"""
import os
import shutil
import subprocess
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'python'))
sys.path.insert(0, os.path.join(HERE, '..', 'conformance'))

try:
    import torch
    import torch.fx
    import torchvision  # noqa: F401 - the export below builds a torchvision model
except ImportError as e:
    print(f'check.py: {e}; skipping')
    sys.exit(77)

import normalizations  # noqa: E402
from fxcpp import format as fxfile  # noqa: E402

FXC, WORK = sys.argv[1], sys.argv[2]
failures = []


def fxc(*args, expect=0):
    p = subprocess.run([FXC, *args], capture_output=True, text=True)
    if p.returncode != expect:
        failures.append(f'fxc {" ".join(args)}: exit {p.returncode}, expected {expect}\n{p.stderr}')
    return p


def check(cond, what):
    if not cond:
        failures.append(what)


def main():
    os.makedirs(WORK, exist_ok=True)
    path = lambda name: os.path.join(WORK, name)  # noqa: E731
    env = dict(os.environ, PYTHONPATH=os.path.join(HERE, '..', '..', 'python'))
    subprocess.run([sys.executable, '-m', 'fxcpp', 'export', 'torchvision.models.resnet18', '-o', path('r18.fxg'),
                    '--example', '1,3,64,64'], check=True, env=env)
    torch.manual_seed(0)
    x = torch.randn(2, 3, 64, 64)
    torch.save([x], path('in.pt'))
    gm = fxfile.load(path('r18.fxg'))
    pairs = normalizations.normalizations([])

    # show
    check(fxc('show', path('r18.fxg'), '--graph').stdout == normalizations.apply(str(gm.graph), pairs) + '\n',
          'fxc show --graph differs from torch.fx\'s graph')
    check(fxc('show', path('r18.fxg'), '--code').stdout == gm.code, 'fxc show --code differs from torch.fx\'s code')
    check('layer1_0_conv1' in fxc('show', path('r18.fxg'), '--tabular').stdout, 'fxc show --tabular')
    check('at::Tensor' in fxc('show', path('r18.fxg'), '--cpp').stdout, 'fxc show --cpp')

    # run
    fxc('run', path('r18.fxg'), '--inputs', path('in.pt'), '--output', path('out.pt'))
    with torch.no_grad():
        expected = gm(x)
    out = torch.load(path('out.pt'))
    check(isinstance(out, list) and len(out) == 1 and torch.allclose(out[0], expected, rtol=1e-4, atol=1e-5),
          'fxc run output differs from PyTorch\'s')

    # run: a module returning numbers, a bool, None, a string and a dict beside tensors
    class Mixed(torch.nn.Module):
        def forward(self, x):
            return x * 2, x.size(0), {'sum': x.sum(), 'none': None, 'is_4d': x.dim() == 4, 'scale': 1.5}

    fxfile.save(torch.fx.symbolic_trace(Mixed()), path('mixed.fxg'))
    fxc('run', path('mixed.fxg'), '--inputs', path('in.pt'), '--output', path('mixed_out.pt'))
    out = torch.load(path('mixed_out.pt'))
    want = Mixed()(x)
    check(isinstance(out, list) and len(out) == 3 and torch.allclose(out[0], want[0]) and out[1] == 2
          and isinstance(out[2], dict) and list(out[2]) == ['sum', 'none', 'is_4d', 'scale']
          and torch.allclose(out[2]['sum'], want[2]['sum']) and out[2]['none'] is None
          and out[2]['is_4d'] is True and out[2]['scale'] == 1.5,
          f'fxc run of a module with non-tensor outputs: {out!r}')
    p = fxc('run', path('mixed.fxg'), '--inputs', path('in.pt'))
    check("output 1: 2\n" in p.stdout and "'none': None, 'is_4d': True, 'scale': 1.5}" in p.stdout,
          f'fxc run printed {p.stdout!r}')

    # opt: the optimized file still gives the same outputs, in fxc and in torch.fx
    p = fxc('opt', path('r18.fxg'), '-p', 'remove_dropout,fuse,cse,dce', '-o', path('opt.fxg'), '--verify',
            '--inputs', path('in.pt'))
    check('modified' in p.stdout, f'fxc opt: {p.stdout}')
    fused = fxfile.load(path('opt.fxg'))
    check(not any(isinstance(m, torch.nn.BatchNorm2d) for m in fused.modules()), 'fxc opt left BatchNorm2d')
    with torch.no_grad():
        check(torch.allclose(fused(x), expected, rtol=1e-3, atol=1e-4), 'the fused file in torch.fx differs')

    # draw
    fxc('draw', path('r18.fxg'), '-o', path('r18.svg'))
    with open(path('r18.svg')) as f:
        check('<svg' in f.read(), 'fxc draw wrote no SVG')

    # export-py: a package Python imports and runs
    fxc('export-py', path('r18.fxg'), path('r18_py'))
    sys.path.insert(0, WORK)
    import r18_py  # noqa: E402
    with torch.no_grad():
        check(torch.allclose(r18_py.FxModule().eval()(x), expected, rtol=1e-4, atol=1e-5), 'export-py module differs')

    # bench
    p = fxc('bench', path('r18.fxg'), '--inputs', path('in.pt'), '-n', '3', '--warmup', '1')
    check('median' in p.stdout, f'fxc bench: {p.stdout}')

    # compile: a LayerNorm, a Linear with GELU, a softmax, fused and built;
    # the outputs equal torch.fx's run of the same file
    with open(path('block.py'), 'w') as f:
        f.write('import torch\n'
                'class Block(torch.nn.Module):\n'
                '    def __init__(self):\n'
                '        super().__init__()\n'
                '        self.norm = torch.nn.LayerNorm(32)\n'
                '        self.fc = torch.nn.Linear(32, 48)\n'
                '    def forward(self, x):\n'
                '        return torch.softmax(torch.nn.functional.gelu(self.fc(self.norm(x))), -1)\n')
    subprocess.run([sys.executable, '-m', 'fxcpp', 'export', path('block.py') + ':Block', '-o', path('block.fxg')],
                   check=True, env=env)
    bx = torch.randn(5, 7, 32)
    torch.save([bx], path('block_in.pt'))
    shutil.rmtree(path('block_debug'), ignore_errors=True)  # left by earlier runs in this folder
    shutil.rmtree(path('block_cpp'), ignore_errors=True)
    p = fxc('compile', path('block.fxg'), '--inputs', path('block_in.pt'), '--output', path('block_out.pt'),
            '--debug', path('block_debug'), '--emit', path('block_cpp'), '--class-name', 'Block', '-n', '3')
    check(p.stdout.startswith('2 kernels'), f'fxc compile: {p.stdout}')
    # --emit: the project (tests/compile/export_test.cpp builds such projects)
    emitted = {name: open(os.path.join(path('block_cpp'), name)).read()
               for name in ('kernels.cpp', 'kernels.h', 'forward.cpp', 'CMakeLists.txt')}
    check(emitted['forward.cpp'].count('fx_kernels::cpp_fused_') == 2 and 'Block::forward' in emitted['forward.cpp'],
          'fxc compile --emit: forward.cpp does not call the two kernels')
    check('kernels.cpp' in emitted['CMakeLists.txt'] and 'extern "C" void cpp_fused_' in emitted['kernels.cpp'],
          'fxc compile --emit: no kernels in the project')
    with torch.no_grad():
        expected_block = fxfile.load(path('block.fxg'))(bx)
    check(torch.allclose(torch.load(path('block_out.pt'))[0], expected_block, rtol=1e-4, atol=1e-5),
          'fxc compile outputs differ from torch.fx\'s')
    sources = [os.path.join(d, 'source.cpp') for d in os.scandir(path('block_debug'))]
    check(len(sources) == 1 and 'extern "C" void cpp_fused_' in open(sources[0]).read(),
          'fxc compile --debug wrote no source')
    # a second process builds nothing; a damaged cache entry is built again
    shutil.rmtree(path('kernel_cache'), ignore_errors=True)  # left by an earlier run in this folder
    os.environ['FXCPP_CACHE_DIR'] = path('kernel_cache')
    compile_block = ('compile', path('block.fxg'), '--inputs', path('block_in.pt'), '-n', '1')
    first = fxc(*compile_block).stdout
    second = fxc(*compile_block).stdout
    check('(build: built)' in first and '(build: cached)' in second, f'fxc compile cache: {first!r}, {second!r}')
    library = [line.split(': ', 1)[1] for line in second.splitlines() if line.startswith('library: ')]
    check(len(library) == 1 and library[0].startswith(path('kernel_cache')), f'fxc compile library: {second!r}')
    if library:
        with open(library[0], 'wb') as f:
            f.write(b'not a shared library')
        third = fxc(*compile_block).stdout
        check('(build: built)' in third, f'fxc compile after a damaged cache entry: {third!r}')

    # malformed input: one line on stderr, a non-zero exit code
    torch.save([x, x], path('two.pt'))
    # torch.save's byteorder record (torch >= 2.1) saying the other byte order than this machine's
    with zipfile.ZipFile(path('r18.fxg')) as src, zipfile.ZipFile(path('swapped.fxg'), 'w') as dst:
        other = b'big' if sys.byteorder == 'little' else b'little'
        for info in src.infolist():
            dst.writestr(info, other if info.filename.endswith('/byteorder') else src.read(info))
    with open(path('junk.fxg'), 'w') as f:
        f.write('not a zip')
    for args, code, words in [
        (('show', path('missing.fxg')), 1, 'cannot open'),
        (('show', path('junk.fxg')), 1, 'not a GraphModule file'),
        (('show', path('in.pt')), 1, 'not a GraphModule file'),
        (('show', path('swapped.fxg')), 1, ('big' if sys.byteorder == 'little' else 'little') + '-endian tensors'),
        (('run', path('r18.fxg'), '--inputs', path('two.pt')), 1, 'holds 2 tensors, but the module takes 1 input (x)'),
        (('run', path('r18.fxg')), 2, 'needs --inputs'),
        (('opt', path('r18.fxg'), '-p', 'nope', '-o', path('x.fxg')), 1, 'nope'),
        (('frobnicate',), 2, "no command 'frobnicate'"),
        (('show', path('r18.fxg'), '--bogus'), 2, 'has no option --bogus'),
    ]:
        p = fxc(*args, expect=code)
        lines = p.stderr.strip().splitlines()
        check(len(lines) == 1 and words in lines[0] and lines[0].startswith('fxc: error: '),
              f'fxc {" ".join(args)}: stderr {p.stderr!r}, expected one line with {words!r}')

    if failures:
        print('\n\n'.join(failures))
        sys.exit(1)
    print('fxc: all commands ok')


main()
