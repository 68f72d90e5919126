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


def group(mangled):
    """Our kernels by their own name; library kernels (cuBLAS' nvjet / xmma / cutlass) as one group."""
    if "portllm" in mangled:
        return short_name(mangled)
    if re.search(r"gemm|nvjet|xmma|cutlass", mangled, re.I):
        return "vendor BLAS GEMM"
    return mangled[:44]


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


SAMPLER = re.compile(r"sample|argmax", re.I)


def split_steps(rows, name_of):
    """rows (in start order) cut into engine steps after each sampler kernel, a step's last kernel;
    name_of(row) is the name the sampler is recognized by. A trailing partial step is kept."""
    steps, cur = [], []
    for r in rows:
        cur.append(r)
        if SAMPLER.search(name_of(r)):
            steps.append(cur)
            cur = []
    if cur:
        steps.append(cur)
    return steps
