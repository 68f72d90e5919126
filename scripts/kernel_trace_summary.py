#!/usr/bin/env python3
"""What each kernel adds to a decode step, from scripts/kernel_trace.cpp's CSV (gpu-check.sh `trace`).

Kernels (and memory copies, where the tracer records them) of the stream with the most launches,
cut into steps after each sampler kernel. The
decode steps are the steps whose kernel sequence is the most common one. For each kernel of a
step: its duration (end - start; with programmatic launch it starts while its predecessor drains,
so durations overlap), its start relative to its predecessor's end (negative: it started early),
and its increment (its end minus its predecessor's end): the increments of
a step add up to the step's time on the device, so they say what each kernel costs the step.
Grouped by (kernel, grid), sorted by increment. Usage: kernel_trace_summary.py trace.csv [N]
(N: the last N decode steps, default all)."""
import re
import sys
from collections import Counter, OrderedDict

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from kernel_trace_csv import read_trace, short_name  # noqa: E402


rows = [(start, end, stream, grid, short_name(name)) for start, end, stream, grid, name in read_trace(sys.argv[1])]
main = Counter(r[2] for r in rows).most_common(1)[0][0]
rows = sorted((r for r in rows if r[2] == main), key=lambda r: r[0])
steps, cur = [], []
for r in rows:
    cur.append(r)
    if re.search(r"sample|argmax", r[4], re.I):
        steps.append(cur)
        cur = []
sigs = Counter(tuple((r[4], r[3]) for r in s) for s in steps)
if not sigs:
    sys.exit(f"{sys.argv[1]}: no sampler kernel among {len(rows)} kernels")
sig, n_sig = sigs.most_common(1)[0]
idx = [i for i, s in enumerate(steps) if tuple((r[4], r[3]) for r in s) == sig and i > 0]
if len(sys.argv) > 2:
    idx = idx[-int(sys.argv[2]):]
if not idx:
    sys.exit("no decode step with a predecessor step")
groups = OrderedDict()
step_us, gap_us = [], []
for i in idx:
    s, prev_end = steps[i], steps[i - 1][-1][1]
    step_us.append((s[-1][1] - prev_end) / 1e3)
    gap_us.append(max(0, s[0][0] - prev_end) / 1e3)
    last_end = prev_end
    for st, en, _s, grid, name in s:
        g = groups.setdefault((name, grid), [0, 0.0, 0.0, 0.0])
        g[0] += 1
        g[1] += (en - st) / 1e3
        g[2] += max(0, en - last_end) / 1e3  # the first kernel's includes the gap after the last step
        g[3] += (st - last_end) / 1e3  # negative: started before its predecessor ended
        last_end = max(last_end, en)
ns = len(idx)
print(f"{ns} decode steps of {len(sig)} kernels; step {sum(step_us) / ns:.1f} us (sampler end to sampler end),"
      f" of which {sum(gap_us) / ns:.1f} us before the first kernel starts")
print(f"{'incr/step us':>12} {'share':>6} {'n/step':>6} {'incr us':>8} {'dur us':>8} {'start us':>8}  {'grid':>12}  kernel")
total = sum(g[2] for g in groups.values()) / ns
for (name, grid), (n, dur, inc, lag) in sorted(groups.items(), key=lambda kv: -kv[1][2]):
    print(f"{inc / ns:12.1f} {100 * inc / ns / total:5.1f}% {n / ns:6.0f} {inc / n:8.2f} {dur / n:8.2f} {lag / n:8.2f}"
          f"  {grid:>12}  {name}")
