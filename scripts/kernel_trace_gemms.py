#!/usr/bin/env python3
"""A dense model's projections in a traced throughput run, by batch size, against their limits.

kernel_trace_totals.py says how much of a run the GEMMs take; this says which projection at which
batch size is far from its limit. From scripts/kernel_trace.cpp's CSV of a run of a dense model
(gpu-check.sh `trace` with TRACE_TPUT), each step's tokens are the grid of its first embedding
kernel (one block per token); its projections are its GEMM kernels in launch order (the vendor's,
and ours: GEMVs and matmuls), 4 per layer (qkv, o, gate|up, down) and the LM head last. A step
whose count does not fit is skipped and counted. Each projection is charged its kernels' summed
durations (a split-K reduction is charged to the GEMM before it) and compared with
max(weight bytes / bandwidth, FLOPs / GEMM rate), at the rates given (the copy bandwidth and the
bf16 GEMM rate gpu-check's probe measures). Decode attention is shown beside them as time per
step only: the trace does not carry the contexts, so its bytes are unknown.

Usage: kernel_trace_gemms.py trace.csv config.json [GB/s] [TFLOP/s]   (defaults 4252, 894)"""
import json
import re
import sys
from collections import defaultdict

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from kernel_trace_csv import read_trace, short_name, split_steps  # noqa: E402

trace, cfg_path = sys.argv[1], sys.argv[2]
bw = float(sys.argv[3]) * 1e9 if len(sys.argv) > 3 else 4252e9
peak = float(sys.argv[4]) * 1e12 if len(sys.argv) > 4 else 894e12
cfg = json.load(open(cfg_path))
H, I, L, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
D = cfg.get("head_dim", H // cfg["num_attention_heads"])
NQ, NKV = cfg["num_attention_heads"], cfg["num_key_value_heads"]
# (name, N, K) of each projection, out[M, N] = x[M, K] W[N, K]^T, bf16 weights.
SLOTS = [("qkv", (NQ + 2 * NKV) * D, H), ("o_proj", H, NQ * D), ("gate_up", 2 * I, H), ("down", H, I)]
HEAD = ("lm_head", V, H)

GEMM = re.compile(r"gemm|nvjet|xmma|cutlass|gemv|matmul", re.I)
REDUCE = re.compile(r"splitKreduce|split_?k\w*reduce", re.I)  # the vendor BLAS' split-K reduction
PREFILL, EMBED = re.compile(r"prefill", re.I), re.compile(r"embed", re.I)
ATTN = re.compile(r"attn_decode|attention_decode", re.I)

# Kernels by their own names (a mangled name's template arguments may name other things).
rows = sorted((start, end, s, g, short_name(name) if "portllm" in name else name)
              for start, end, s, g, name in read_trace(trace))
steps = split_steps(rows, lambda r: r[4])


def bucket(t):
    for hi in (1, 8, 16, 32, 64, 96, 128, 160, 192, 224, 256):
        if t <= hi:
            return hi
    return 1 << 30


# (phase, bucket) -> slot -> [time ns, launches, tokens]
acc = defaultdict(lambda: defaultdict(lambda: [0.0, 0, 0]))
nsteps, skipped = defaultdict(int), 0
for step in steps:
    emb = next((r for r in step if EMBED.search(r[4])), None)
    if emb is None:
        skipped += 1
        continue
    tokens = int(emb[3].split("x")[0])
    phase = "prefill" if any(PREFILL.search(r[4]) for r in step) else "decode"
    gemms = []  # durations, ns
    for start, end, _s, _g, name in step:
        if REDUCE.search(name):
            if gemms:
                gemms[-1] += end - start
        elif GEMM.search(name):
            gemms.append(end - start)
    if len(gemms) != 4 * L + 1:
        skipped += 1
        continue
    key = (phase, tokens if phase == "prefill" else bucket(tokens))
    nsteps[key] += 1
    for i, d in enumerate(gemms):
        slot = "lm_head" if i == 4 * L else SLOTS[i % 4][0]
        a = acc[key][slot]
        a[0] += d
        a[1] += 1
        a[2] += tokens
    attn = sum(r[1] - r[0] for r in step if ATTN.search(r[4]))
    acc[key]["attention"][0] += attn
    acc[key]["attention"][1] += 1


def limit(n, k, m):
    """ns"""
    return max(2.0 * n * k / bw, 2.0 * m * n * k / peak) * 1e9


print(f"{len(steps)} steps, {skipped} skipped (no embedding, or not {4 * L + 1} projections); "
      f"limits at {bw / 1e9:.0f} GB/s and {peak / 1e12:.0f} TFLOP/s")
print(f"{'phase':8s} {'tokens':>7s} {'steps':>6s} " + " ".join(f"{s:>17s}" for s, _, _ in SLOTS + [HEAD]) +
      f" {'attention':>10s}  (projections: us per launch / ratio to limit; attention: us per step)")
grand = defaultdict(lambda: [0.0, 0.0])
for key in sorted(acc, key=lambda k: (k[0] != "decode", k[1])):
    phase, tok = key
    cells = []
    for s, n, k in SLOTS + [HEAD]:
        t, c, m = acc[key][s]
        if c == 0:
            cells.append(f"{'-':>17s}")
            continue
        # The LM head's rows: one per sequence in decode; in prefill unknown, taken as its weight read.
        mm = m if s != "lm_head" or phase == "decode" else 0
        lim = limit(n, k, mm / c) * c
        cells.append(f"{t / c / 1e3:9.1f} / {lim / t:5.2f}")
        grand[(phase, s)][0] += t
        grand[(phase, s)][1] += lim
    at, ac = acc[key]["attention"][0], acc[key]["attention"][1]
    print(f"{phase:8s} {tok:7d} {nsteps[key]:6d} " + " ".join(cells) + f" {at / max(ac, 1) / 1e3:10.1f}")
print("\nwhole run, ms (ratio to limit):")
for phase in ("prefill", "decode"):
    parts = [f"{s} {grand[(phase, s)][0] / 1e6:.1f} ({grand[(phase, s)][1] / max(grand[(phase, s)][0], 1):.2f})"
             for s, _, _ in SLOTS + [HEAD] if grand[(phase, s)][0] > 0]
    print(f"  {phase}: " + ", ".join(parts))
