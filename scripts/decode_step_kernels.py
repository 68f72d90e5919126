#!/usr/bin/env python3
"""One decode step's kernels from an Nsight Compute CSV (gpu-check.sh's `timeline` stage).

The CSV holds gpu__time_duration.sum of every kernel of a bench run (prefill, then decode steps).
A decode step ends with the sampler's kernel; the kernels between the last two sampler launches
are one step. Prints them grouped by kernel (count, total and mean us) and the step's sum."""
import csv
import re
import sys
from collections import OrderedDict

rows = []
with open(sys.argv[1], newline="") as f:
    lines = [l for l in f if l.startswith('"')]  # ncu's own log lines are not CSV
for r in csv.DictReader(lines):
    if r.get("Metric Name") != "gpu__time_duration.sum":
        continue
    v = float(r["Metric Value"].replace(",", ""))
    us = v / 1000.0 if r["Metric Unit"] in ("nsecond", "ns") else v if r["Metric Unit"] in ("usecond", "us") else v * 1000.0
    rows.append((r["Kernel Name"], r["Grid Size"], r["Block Size"], us))
ends = [i for i, (n, *_rest) in enumerate(rows) if re.search(r"sample|argmax", n)]
if len(ends) < 2:
    sys.exit(f"{sys.argv[1]}: fewer than two sampler launches among {len(rows)} kernels")
step = rows[ends[-2] + 1 : ends[-1] + 1]
groups = OrderedDict()
for name, grid, block, us in step:
    short = re.sub(r"^void |portllm::gpu::|\(anonymous namespace\)::", "", name)
    short = re.sub(r"\(.*", "", short)[:70]
    key = (short, grid)
    n, t = groups.get(key, (0, 0.0))
    groups[key] = (n + 1, t + us)
total = sum(us for *_x, us in step)
print(f"one decode step: {len(step)} kernels, {total:.1f} us of kernel time")
for (short, grid), (n, t) in sorted(groups.items(), key=lambda kv: -kv[1][1]):
    print(f"  {t:9.1f} us {100 * t / total:5.1f}%  {n:4d} x {t / n:7.2f} us  grid {grid:>16}  {short}")
