#!/usr/bin/env python3
"""Where a whole run's idle device time sits, from scripts/kernel_trace.cpp's CSV.

kernel_trace_totals.py says how much of a throughput run the device is idle; this one says where:
each gap in the merged coverage of all streams (no kernel running) is charged to the pair of
kernels around it, and to its place in the engine step (before the step's first kernel: the host
building the next step; inside the step: a launch the device waited for). Start-up (up to the
first prefill step's embedding kernel) is left out as in kernel_trace_totals.py. The gaps of 100 us
and more are also listed one by one, with the step they precede.
Usage: kernel_trace_gaps.py trace.csv [N] (N rows per table, default 15). Times in ms."""
import re
import sys
from collections import defaultdict

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from kernel_trace_csv import SAMPLER, group, read_trace  # noqa: E402

rows = sorted((start, end, group(name)) for start, end, _stream, _grid, name in read_trace(sys.argv[1]))
top = int(sys.argv[2]) if len(sys.argv) > 2 else 15
PREFILL = re.compile(r"prefill", re.I)
EMBED = re.compile(r"embed", re.I)
first_prefill = next((i for i, r in enumerate(rows) if PREFILL.search(r[2])), 0)
rows = rows[next((i for i in range(first_prefill - 1, -1, -1) if EMBED.search(rows[i][2])), 0):]

by_pair = defaultdict(lambda: [0, 0.0])
by_place = defaultdict(lambda: [0, 0.0])
sizes = [(1e3, "<1 us"), (5e3, "1-5 us"), (20e3, "5-20 us"), (100e3, "20-100 us"), (1e12, ">=100 us")]
by_size = defaultdict(lambda: [0, 0.0])
largest = []  # (gap, step, before, after): the gaps of 100 us and more, each on its own
covered_to, last_name, step_start, step = rows[0][1], rows[0][2], False, 0
for start, end, name in rows[1:]:
    gap = start - covered_to
    if gap >= 100e3:
        largest.append((gap, step, last_name, name))
    if gap > 0:
        place = "step boundary (after the sampler)" if step_start else "inside a step"
        for key, table in (((last_name, name), by_pair), (place, by_place),
                           (next(label for bound, label in sizes if gap < bound), by_size)):
            table[key][0] += 1
            table[key][1] += gap
    if end > covered_to:
        covered_to, last_name = end, name
    step_start = bool(SAMPLER.search(name))
    step += step_start

span = rows[-1][1] - rows[0][0]
idle = sum(t for _, t in by_place.values())
print(f"span {span / 1e6:.3f} ms, idle {idle / 1e6:.3f} ms ({idle / span:.2%})")
for title, table in (("by place", by_place), ("by size", by_size)):
    print(f"\nidle {title}:")
    for key, (n, t) in sorted(table.items(), key=lambda kv: -kv[1][1]):
        print(f"  {key:40s} {n:8d} gaps {t / 1e6:9.3f} ms {t / max(n, 1) / 1e3:8.1f} us each")
print("\nidle by the kernels around it (before -> after):")
for (a, b), (n, t) in sorted(by_pair.items(), key=lambda kv: -kv[1][1])[:top]:
    print(f"  {a[:34]:34s} -> {b[:34]:34s} {n:8d} {t / 1e6:9.3f} ms {t / n / 1e3:7.1f} us")
print(f"\nthe largest gaps (of {len(largest)} of 100 us or more; steps counted from 0 at the first prefill step):")
for gap, st, a, b in sorted(largest, reverse=True)[:top]:
    print(f"  {gap / 1e3:9.1f} us before step {st:5d}'s {b[:34]:34s} after {a[:34]}")
