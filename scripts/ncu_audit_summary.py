#!/usr/bin/env python3
"""Memory-access audit from Nsight Compute's details page (gpu-check.sh's `audit` stage).

Input: `ncu -i REPORT --page details` of a run profiled with the SpeedOfLight and SourceCounters
sections. For each distinct kernel (name and grid; its first launch) prints the duration, DRAM
and L2 busy %, and the share of L2 sectors and shared-memory wavefronts beyond the ideal for its
access widths ("excessive"). A copy that ncu counts at 2x its ideal sectors is how the fp8 decode
attention's misaligned shared memory showed (BENCHMARKS.md, twenty-fifth session); this lists
every kernel of a step the same way, worst first."""
import re
import sys

HEADER = re.compile(r"^  (\S.*?) \((\d+, \d+, \d+)\)x\((\d+, \d+, \d+)\), Context \d+, Stream \d+, Device \d+, CC")
METRIC = re.compile(r"^\s+(DRAM Throughput|L2 Cache Throughput|Duration)\s+(\S+)\s+([\d,.]+)\s*$")
EXCESS_G = re.compile(r"uncoalesced global accesses resulting in a total of (\d+) excessive sectors \((\d+)% of the\s+total")
EXCESS_S = re.compile(r"uncoalesced shared accesses resulting in a total of (\d+) excessive wavefronts \((\d+)% of the\s+total")


def short(name):
    name = re.sub(r"^void |portllm::gpu::|\(anonymous namespace\)::|<unnamed>::|unnamed>::", "", name)
    return re.sub(r"\(.*", "", name)[:80]


def kernels(lines):
    cur = None
    for line in lines:
        m = HEADER.match(line)
        if m:
            if cur:
                yield cur
            cur = {"name": short(m.group(1)), "grid": m.group(2), "text": []}
            continue
        if cur is None:
            continue
        cur["text"].append(line)
        mm = METRIC.match(line)
        if mm:
            v = float(mm.group(3).replace(",", ""))
            if mm.group(1) == "Duration":
                v = v / 1000.0 if mm.group(2) in ("ns", "nsecond") else v * 1000.0 if mm.group(2) in ("ms", "msecond") else v
            cur[mm.group(1)] = v
    if cur:
        yield cur


def main():
    with open(sys.argv[1], errors="replace") as f:
        lines = f.read().splitlines()
    seen, rows = set(), []
    for k in kernels(lines):
        key = (k["name"], k["grid"])
        if key in seen:
            continue
        seen.add(key)
        text = " ".join(t.strip() for t in k["text"])
        g = EXCESS_G.search(text)
        s = EXCESS_S.search(text)
        rows.append((int(g.group(2)) if g else 0, int(s.group(2)) if s else 0, k))
    if not rows:
        sys.exit(f"{sys.argv[1]}: no kernels found")
    rows.sort(key=lambda r: (-r[0], -r[1], -r[2].get("Duration", 0)))
    print(f"{'us':>9} {'DRAM%':>6} {'L2%':>6} {'xs-L2%':>7} {'xs-smem%':>8}  kernel (grid)")
    for g, s, k in rows:
        print(f"{k.get('Duration', 0):9.1f} {k.get('DRAM Throughput', 0):6.1f} {k.get('L2 Cache Throughput', 0):6.1f} "
              f"{g:7d} {s:8d}  {k['name']} ({k['grid']})")


if __name__ == "__main__":
    main()
