#!/usr/bin/env python3
"""The house's measures (issue 35): functions over 120 lines, source files over 800, include
arrows that point up (models/ or runtime/ including ports/), and include cycles among the
converter's files. Reads the files git tracks at REV (default: the working tree).
Usage: toolchains/house_metrics.py [REV]"""
import re, subprocess, sys

rev = sys.argv[1] if len(sys.argv) > 1 else None

def files():
    cmd = ['git', 'ls-tree', '-r', '--name-only', rev] if rev else ['git', 'ls-files']
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.split()

def text(path):
    if rev:
        return subprocess.run(['git', 'show', f'{rev}:{path}'], capture_output=True, text=True).stdout
    return open(path, encoding='utf-8', errors='replace').read()

sources = [f for f in files() if re.search(r'\.(cpp|hpp|h|c|cu|inc)$', f)]
# A function: a line at column 0 that opens a body ("...) {" or "...) const {"), closed by "}" at column 0.
opening = re.compile(r'^[A-Za-z_][^;#]*\)\s*(const\s*)?(noexcept\s*)?\{\s*$')
long_functions, long_files, up_arrows = [], [], []
includes = {}
for f in sources:
    lines = text(f).split('\n')
    if len(lines) - 1 > 800:
        long_files.append((len(lines) - 1, f))
    start = None
    for n, line in enumerate(lines):
        if start is None and opening.match(line):
            start = n
        elif start is not None and line.startswith('}'):
            if n - start - 1 > 120:
                long_functions.append((n - start - 1, f, lines[start][:70]))
            start = None
    for m in re.finditer(r'#include "([^"]+)"', '\n'.join(lines)):
        includes.setdefault(f, []).append(m.group(1))
        if f.startswith(('models/', 'runtime/')) and ('ports/' in m.group(1) or m.group(1).startswith(('file_map', 'cli_'))):
            up_arrows.append(f'{f} -> {m.group(1)}')

# Cycles among models/ files: an include names a file by its path's tail.
by_tail = {}
for f in sources:
    if f.startswith('models/'):
        by_tail.setdefault(f.split('/')[-1], []).append(f)
graph = {}
for f, incs in includes.items():
    if not f.startswith('models/'):
        continue
    stem = re.sub(r'\.(cpp|hpp|h)$', '', f)
    for inc in incs:
        for target in by_tail.get(inc.split('/')[-1], []):
            t_stem = re.sub(r'\.(cpp|hpp|h)$', '', target)
            if t_stem != stem:
                graph.setdefault(stem, set()).add(t_stem)
cycles = set()
def visit(node, path):
    for nxt in graph.get(node, ()):
        if nxt in path:
            cycle = path[path.index(nxt):]
            cycles.add(' <-> '.join(sorted(set(cycle))))
        elif len(path) < 12:
            visit(nxt, path + [nxt])
for node in list(graph):
    visit(node, [node])

print(f'functions over 120 lines: {len(long_functions)}')
for n, f, head in sorted(long_functions, reverse=True):
    print(f'  {n:4d}  {f}: {head}')
print(f'source files over 800 lines: {len(long_files)}')
for n, f in sorted(long_files, reverse=True):
    print(f'  {n:4d}  {f}')
print(f'include arrows that point up (models/ or runtime/ -> ports/): {len(up_arrows)}')
for a in up_arrows:
    print(f'  {a}')
print(f'include cycles among models/ files (as module stems): {len(cycles)}')
for c in sorted(cycles):
    print(f'  {c}')
