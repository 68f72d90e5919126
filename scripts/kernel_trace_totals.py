#!/usr/bin/env python3
"""Where a whole run's device time goes, from scripts/kernel_trace.cpp's CSV (gpu-check.sh `trace`
with TRACE_TPUT=1: the throughput workload under the tracer).

kernel_trace_summary.py looks at one repeated decode step; a throughput run has no such step (the
batch shrinks, prefill chunks mix in), so this one totals the whole run instead. All streams are
merged in start order and each kernel is charged its increment: the part of its interval that no
earlier kernel already covers. The increments add up to the time the device was busy; the rest
of the span is idle (host-bound gaps). Steps are cut after each sampler kernel; a step with a
prefill attention kernel in it counts as a prefill step, the others as decode steps. cuBLAS and
other library kernels are grouped under one name each. Kernels before the run proper (graph
capture, tuning: up to the embedding kernel of the first prefill step) are start-up and only counted; idle gaps are charged to the step of the kernel that ends them. Usage: kernel_trace_totals.py trace.csv [N]
(N rows per table, default 25). Times in ms."""
import re
import sys
from collections import defaultdict

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from kernel_trace_csv import group, read_trace, split_steps  # noqa: E402


rows = [(start, end, group(name)) for start, end, _stream, _grid, name in read_trace(sys.argv[1])]
top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
rows.sort()
PREFILL = re.compile(r"prefill", re.I)

# The run proper starts with the embedding kernel of the first prefill step (the last one before
# the first prefill attention kernel): what comes before it (graph capture, GEMM tuning, warm-up)
# is start-up, reported apart.
EMBED = re.compile(r"embed", re.I)
first_prefill = next((i for i, r in enumerate(rows) if PREFILL.search(r[2])), 0)
run_from = next((i for i in range(first_prefill - 1, -1, -1) if EMBED.search(rows[i][2])), 0)
startup, rows = rows[:run_from], rows[run_from:]
if not rows:
    sys.exit(f"{sys.argv[1]}: no kernels after start-up")

# Steps: cut after each sampler kernel; a step is a prefill step when one of its kernels is a
# prefill attention kernel.
steps = split_steps(rows, lambda r: r[2])

inc = {"prefill": defaultdict(float), "decode": defaultdict(float)}
dur = {"prefill": defaultdict(float), "decode": defaultdict(float)}
cnt = {"prefill": defaultdict(int), "decode": defaultdict(int)}
idle = {"prefill": 0.0, "decode": 0.0}  # gaps charged to the step of the kernel after them
covered_to = rows[0][0]
n_prefill = 0
for step in steps:
    phase = "prefill" if any(PREFILL.search(name) for _, _, name in step) else "decode"
    n_prefill += phase == "prefill"
    for start, end, name in step:
        idle[phase] += max(0, start - covered_to)
        inc[phase][name] += max(0, end - max(start, covered_to))
        covered_to = max(covered_to, end)
        dur[phase][name] += end - start
        cnt[phase][name] += 1
span = rows[-1][1] - rows[0][0]
busy = span - idle["prefill"] - idle["decode"]
if startup:
    print(f"start-up: {len(startup)} kernels over {(startup[-1][1] - startup[0][0]) / 1e6:.3f} ms (not counted below)")
print(f"span {span / 1e6:.3f} ms, device busy {busy / 1e6:.3f} ms ({busy / span:.1%}), idle {(span - busy) / 1e6:.3f} ms; "
      f"{len(rows)} kernels, {len(steps)} steps ({n_prefill} with prefill)")
for phase in ("prefill", "decode"):
    total = sum(inc[phase].values())
    print(f"\n{phase} steps: busy {total / 1e6:.3f} ms, idle before their kernels {idle[phase] / 1e6:.3f} ms")
    print(f"{'kernel':44s} {'launches':>9s} {'incr ms':>10s} {'share':>6s} {'dur ms':>10s} {'us/launch':>9s}")
    for name, t in sorted(inc[phase].items(), key=lambda kv: -kv[1])[:top]:
        n = cnt[phase][name]
        print(f"{name[:44]:44s} {n:9d} {t / 1e6:10.3f} {t / total:6.1%} {dur[phase][name] / 1e6:10.3f} "
              f"{dur[phase][name] / n / 1e3:9.1f}")
