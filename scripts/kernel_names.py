"""Short kernel names from the mangled ones CUPTI reports (kernel_trace_summary.py, kernel_trace_totals.py)."""
import re


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
