#!/usr/bin/env bash
# Single-thread tokenizer encode throughput: portllm vs Hugging Face `tokenizers` on the same
# deterministic >= 10 MB mixed corpus (English prose, source code, CJK) built from repo files.
#
#   scripts/tokenizer-bench.sh [PORTLLM_BINARY] [TOKENIZER_DIR] [MODE]
#     PORTLLM_BINARY  default build/portllm
#     TOKENIZER_DIR   default tests/data/tokenizers/qwen3 (any dir with tokenizer.json)
#     MODE            whole (one encode call over the corpus, default) or lines (one per line)
#
# The HF run (when `python3 -c "import tokenizers"` works) uses TOKENIZERS_PARALLELISM=false and
# RAYON_NUM_THREADS=1 and encodes exactly as portllm does. It also compares the ids of the first
# 3000 corpus lines between the two implementations.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${1:-$ROOT/build/portllm}"
TOK="${2:-$ROOT/tests/data/tokenizers/qwen3}"
MODE="${3:-whole}"
WORK="${TMPDIR:-/tmp}/portllm-tokbench"
mkdir -p "$WORK"
CORPUS="$WORK/corpus.txt"

command -v python3 >/dev/null || { echo "python3 is needed to build the corpus" >&2; exit 1; }

# --- corpus -------------------------------------------------------------------------------
python3 - "$ROOT" "$CORPUS" <<'PY'
import glob, json, os, sys
root, out = sys.argv[1], sys.argv[2]
TARGET = 10 * 1000 * 1000 + 1

def read(p):
    with open(p, encoding="utf-8", errors="replace") as f:
        return f.read()

# English prose: GSM8K (if copied into tests/data) and the project's markdown docs.
english = []
for p in sorted(glob.glob(os.path.join(root, "data/gsm8k/*.jsonl")) +
                glob.glob(os.path.join(root, "../shared/data/gsm8k/*.jsonl"))):
    for line in read(p).splitlines():
        try:
            j = json.loads(line)
        except ValueError:
            continue
        english.append(j.get("question", "") + "\n" + j.get("answer", "") + "\n")
for p in sorted(glob.glob(os.path.join(root, "**/*.md"), recursive=True)):
    if "/build" not in p:
        english.append(read(p))

# Source code of the project.
code = []
for ext in ("cpp", "h", "cu", "cuh", "def", "sh", "py", "cmake", "txt"):
    for p in sorted(glob.glob(os.path.join(root, "src/**/*." + ext), recursive=True) +
                    glob.glob(os.path.join(root, "tests/**/*." + ext), recursive=True) +
                    glob.glob(os.path.join(root, "scripts/*." + ext))):
        code.append(read(p))

# CJK: the CJK texts of the tokenizer cases, plus sentences of CJK characters from the Llama 2
# vocabulary chosen by a fixed LCG (deterministic, no randomness from the environment).
cjk = []
chars = []
for p in sorted(glob.glob(os.path.join(root, "tests/data/tokenizers/*/cases.json"))):
    for c in json.load(open(p, encoding="utf-8")).get("encode", []):
        t = c["text"]
        if any("\u3040" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7a3" for ch in t):
            cjk.append(t + "\n")
vocab_path = os.path.join(root, "tests/data/tokenizers/llama2/tokenizer.json")
if os.path.exists(vocab_path):
    vocab = json.load(open(vocab_path, encoding="utf-8"))["model"]["vocab"]
    chars = sorted(t for t in vocab if len(t) == 1 and ("\u4e00" <= t <= "\u9fff" or "\u3040" <= t <= "\u30ff"))
state = 12345
def lcg():
    global state
    state = (state * 1103515245 + 12345) % (1 << 31)
    return state
if chars:
    for _ in range(4000):
        n = 8 + lcg() % 40
        s = "".join(chars[lcg() % len(chars)] for _ in range(n))
        cjk.append(s + ("。" if lcg() % 3 else "，") + ("\n" if lcg() % 4 == 0 else ""))

# Interleave ~45% English, ~35% code, ~20% CJK in blocks until the target size.
sources = [(english, 45), (code, 35), (cjk, 20)]
sources = [(s, w) for s, w in sources if s]
pos = [0] * len(sources)
parts, size = [], 0
while size < TARGET:
    for k, (src, w) in enumerate(sources):
        budget = w * 200
        while budget > 0:
            piece = src[pos[k] % len(src)]
            pos[k] += 1
            parts.append(piece)
            n = len(piece.encode("utf-8"))
            size += n
            budget -= n
text = "".join(parts)
with open(out, "w", encoding="utf-8") as f:
    f.write(text)
print(f"corpus: {out}: {len(text.encode('utf-8')) / 1e6:.2f} MB "
      f"({len(english)} prose, {len(code)} code, {len(cjk)} CJK blocks)")
PY

# --- portllm ------------------------------------------------------------------------------
echo "== portllm ($BIN)"
"$BIN" tokenize --model "$TOK" --bench "$CORPUS" --bench-mode "$MODE" --bench-runs 3

# --- Hugging Face tokenizers ---------------------------------------------------------------
if python3 -c "import tokenizers" 2>/dev/null; then
  echo "== HF tokenizers ($(python3 -c 'import tokenizers; print(tokenizers.__version__)'))"
  TOKENIZERS_PARALLELISM=false RAYON_NUM_THREADS=1 python3 - "$TOK/tokenizer.json" "$CORPUS" "$MODE" <<'PY'
import sys, time
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[1])
text = open(sys.argv[2], encoding="utf-8").read()
mode = sys.argv[3]
nbytes = len(text.encode("utf-8"))
lines = [l + "\n" for l in text.split("\n")[:-1]] if mode == "lines" else None
best = best_cpu = 0.0
for r in range(3):
    t0 = time.perf_counter()
    c0 = time.thread_time()
    if lines is None:
        n = len(tok.encode(text, add_special_tokens=False).ids)
    else:
        n = sum(len(tok.encode(l, add_special_tokens=False).ids) for l in lines)
    dt = time.perf_counter() - t0
    cpu = time.thread_time() - c0
    best = max(best, nbytes / 1e6 / dt)
    best_cpu = max(best_cpu, nbytes / 1e6 / cpu)
    print(f"run {r + 1}: {nbytes} bytes -> {n} tokens in {dt:.3f} s wall ({cpu:.3f} s cpu): "
          f"{nbytes / 1e6 / dt:.2f} MB/s")
print(f"HF tokenizers encode ({mode}, 1 thread): best {best:.2f} MB/s wall, "
      f"{best_cpu:.2f} MB/s per cpu-second")
PY
  # Parity on the corpus: ids of the first 3000 lines, portllm vs HF.
  python3 - "$CORPUS" "$WORK/lines.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")[:3000]
with open(sys.argv[2], "w", encoding="utf-8") as f:
    for l in lines:
        f.write(json.dumps({"text": l + "\n"}, ensure_ascii=False) + "\n")
PY
  "$BIN" tokenize --model "$TOK" --input "$WORK/lines.jsonl" > "$WORK/portllm_ids.jsonl"
  python3 - "$TOK/tokenizer.json" "$WORK/lines.jsonl" "$WORK/portllm_ids.jsonl" <<'PY'
import json, sys
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[1])
texts = [json.loads(l)["text"] for l in open(sys.argv[2], encoding="utf-8")]
ours = [json.loads(l)["ids"] for l in open(sys.argv[3], encoding="utf-8")]
bad = [i for i, (t, o) in enumerate(zip(texts, ours)) if tok.encode(t, add_special_tokens=False).ids != o]
print(f"parity on corpus lines: {len(texts) - len(bad)}/{len(texts)} identical")
for i in bad[:5]:
    print("  mismatch:", json.dumps(texts[i], ensure_ascii=False)[:200])
sys.exit(1 if bad else 0)
PY
else
  echo "== HF tokenizers: not importable by python3, skipped"
fi
