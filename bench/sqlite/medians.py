#!/usr/bin/env python3
"""Reads `go test -bench -count N` output on stdin and prints a markdown table of the median of
every metric per benchmark (benchstat's central figure, without its dependencies)."""
import re
import statistics
import sys

runs = {}
order = []
for line in sys.stdin:
    m = re.match(r'^(Benchmark\S+?)(-\d+)?\s+(\d+)\s+(.*)$', line.strip())
    if not m:
        continue
    name, rest = m.group(1), m.group(4)
    if name not in runs:
        runs[name] = {}
        order.append(name)
    for val, unit in re.findall(r'([\d.]+)\s+(\S+)', rest):
        runs[name].setdefault(unit, []).append(float(val))

units = ['ns/op', 'cpu-ns/op', 'commits/s', 'loads/s', 'B/op', 'allocs/op']
print('| benchmark | runs | ' + ' | '.join(units) + ' |')
print('|---' * (len(units) + 2) + '|')
for name in order:
    cells = []
    n = 0
    for u in units:
        vs = runs[name].get(u)
        if not vs:
            cells.append('')
            continue
        n = len(vs)
        cells.append(f'{statistics.median(vs):.0f}')
    print(f'| {name.removeprefix("Benchmark")} | {n} | ' + ' | '.join(cells) + ' |')
