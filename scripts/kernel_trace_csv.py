"""scripts/kernel_trace.cpp's CSV, as kernel_trace_summary.py and kernel_trace_totals.py read it."""
import re
import sys


def short_name(mangled):
    """The kernel's own name from an Itanium-mangled one: the first length-prefixed source name
    that is not a namespace of ours."""
    i = 0
    while i < len(mangled):
        m = re.match(r"\d+", mangled[i:])
        if not m:
            i += 1
            continue
        n, i = int(m.group()), i + m.end()
        ident = mangled[i:i + n]
        i += n
        if ident not in ("portllm", "gpu", "sm80", "sm90") and not ident.startswith("_GLOBAL__N") and len(ident) > 3:
            return ident
    return mangled[:60]


def read_trace(path):
    """The CSV's kernels as (start_ns, end_ns, stream, "gx x gy x gz", mangled name), in file order;
    exits with a message when there are none."""
    rows = []
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split(",", 7)
            if len(parts) < 8:
                continue
            start, end, stream, gx, gy, gz, _bx, name = parts
            rows.append((int(start), int(end), int(stream), f"{gx}x{gy}x{gz}", name))
    if not rows:
        sys.exit(f"{path}: no kernels")
    return rows
