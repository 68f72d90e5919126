#!/usr/bin/env bash
# portllm generate (single prompt and JSONL batch) and bench through the engine, on the embedded
# stories260K. Usage: bash generate_engine.sh <portllm-binary> <source-dir>
set -euo pipefail
BIN=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# Greedy default: the continuation published with the model (see models/stories260K/README.md).
out=$("$BIN" generate --max-tokens 30 --threads 2)
case "$out" in
  "Once upon a time, there was a little girl named Lily. She loved to play outside in the park."*) ;;
  *) echo "unexpected greedy output: $out"; exit 1 ;;
esac

# Stop string: the text ends right before it.
out=$("$BIN" generate --max-tokens 60 --stop " park" --threads 2)
[ "$out" = "Once upon a time, there was a little girl named Lily. She loved to play outside in the" ] || { echo "stop: $out"; exit 1; }

# Batch mode: one output line per input line (n = 2 gives two), in order, with finish reasons.
cat > "$TMP/in.jsonl" <<'JSONL'
{"prompt": "Once upon a time"}
{"prompt_ids": [1, 403, 407], "max_tokens": 5, "n": 2, "temperature": 1.0, "seed": 1}
{"prompt": "The cat", "max_tokens": 8, "logprobs": 2}
{"prompt_ids": [1, 9999]}
JSONL
"$BIN" generate --input "$TMP/in.jsonl" --output "$TMP/out.jsonl" --max-tokens 12 --threads 2
[ "$(wc -l < "$TMP/out.jsonl")" = 5 ] || { cat "$TMP/out.jsonl"; exit 1; }
python3 - "$TMP/out.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["index"] for r in rows] == [0, 1, 1, 2, 3], rows
assert rows[0]["text"].startswith(", there was a little girl"), rows[0]
assert rows[0]["finish_reason"] == "length" and len(rows[0]["token_ids"]) == 12
assert len(rows[1]["token_ids"]) == 5 and rows[1]["sample"] == 0 and rows[2]["sample"] == 1
assert len(rows[3]["logprobs"]) == 8 and len(rows[3]["logprobs"][0]["top"]) == 2
assert rows[4]["finish_reason"] == "error" and "vocabulary" in rows[4]["error"]
PY

# Benchmarks run and report JSON.
"$BIN" bench throughput --num-prompts 8 --input-len 20:40 --output-len 10:20 --threads 2 --json > "$TMP/t.json"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['output_tokens'] > 0 and d['requests_per_s'] > 0" "$TMP/t.json"
"$BIN" bench latency --batch-size 2 --input-len 8 --output-len 8 --num-iters 1 --threads 2 --json > "$TMP/l.json"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['mean_ttft_ms'] > 0" "$TMP/l.json"
# The text form adds the engine loop's host time per step (schedule, forward launch, sample, outputs).
"$BIN" bench latency --batch-size 2 --input-len 8 --output-len 8 --num-iters 1 --threads 2 > "$TMP/l.txt"
grep -Eq "^engine steps +[1-9][0-9]* \(0 scheduled ahead\): schedule [0-9.]+, forward [0-9.]+, sample [0-9.]+, outputs [0-9.]+ ms/step$" "$TMP/l.txt" ||
  { cat "$TMP/l.txt"; echo "FAIL: bench latency prints no engine step times"; exit 1; }
# --async-scheduling (off by default on the CPU): decode steps after the first are launched ahead
# (each iteration's prefill step and first decode step are not); both flags at once are refused.
"$BIN" bench latency --batch-size 2 --input-len 8 --output-len 8 --num-iters 1 --threads 2 --async-scheduling > "$TMP/la.txt"
grep -Eq "^engine steps +[1-9][0-9]* \([1-9][0-9]* scheduled ahead\):" "$TMP/la.txt" ||
  { cat "$TMP/la.txt"; echo "FAIL: bench latency --async-scheduling scheduled no step ahead"; exit 1; }
if "$BIN" bench latency --batch-size 1 --input-len 8 --output-len 2 --async-scheduling --no-async-scheduling > "$TMP/lc.txt" 2>&1; then
  echo "FAIL: contradictory --async-scheduling flags accepted"; exit 1
fi
grep -q "contradict each other" "$TMP/lc.txt" || { cat "$TMP/lc.txt"; echo "FAIL: no clear error for contradictory flags"; exit 1; }
# Bad options: one error line naming the option, exit 1, nothing echoed before it (the prompt is
# printed only once the request is accepted).
for bad in "--max-model-len -5|--max-model-len must be" "--num-kv-blocks -3|--num-kv-blocks must be" \
           "--block-size -1|--block-size must be" "--threads 100000|--threads must be" \
           "--dtype q4|--dtype 'q4'" "--temperature -1|temperature must be"; do
  args=${bad%%|*}; want=${bad#*|}
  rc=0; "$BIN" generate --max-tokens 4 $args > "$TMP/bad.txt" 2>&1 || rc=$?
  [ "$rc" = 1 ] && [ "$(head -c 6 "$TMP/bad.txt")" = "error:" ] && grep -qF -- "$want" "$TMP/bad.txt" ||
    { cat "$TMP/bad.txt"; echo "FAIL: '$args' gave rc=$rc without a clear error"; exit 1; }
done
# Batch lines with fields of the wrong kind or range: an error naming file, line and field (n as
# 1e30 was a std::vector length_error; 3.7 max_tokens and a list as logit_bias passed silently).
for line in '{"prompt": "hi", "n": 1e30}|field '"'"'n'"'"' must be an integer' \
            '{"prompt": "hi", "max_tokens": 3.7}|field '"'"'max_tokens'"'"' must be an integer' \
            '{"prompt": "hi", "logit_bias": [1, 2]}|field '"'"'logit_bias'"'"' must be an object' \
            '{"prompt": "hi", "seed": -5}|field '"'"'seed'"'"' must be an integer'; do
  printf '%s\n' "${line%%|*}" > "$TMP/bad.jsonl"
  rc=0; "$BIN" generate --input "$TMP/bad.jsonl" --output "$TMP/bad.out" > "$TMP/bad.txt" 2>&1 || rc=$?
  [ "$rc" = 1 ] && grep -qF -- "bad.jsonl:1: ${line#*|}" "$TMP/bad.txt" ||
    { cat "$TMP/bad.txt"; echo "FAIL: batch line ${line%%|*}: rc=$rc without a clear error"; exit 1; }
done

# Counts that must be positive are refused when parsing the options, naming the option.
for args in "bench throughput --num-prompts 0" "bench latency --batch-size -1" "serve --port 99999"; do
  rc=0; "$BIN" $args > "$TMP/bad.txt" 2>&1 || rc=$?
  opt=$(grep -o -- '--[a-z-]*' <<<"$args")
  [ "$rc" != 0 ] && grep -qF -- "$opt: Value" "$TMP/bad.txt" && grep -q "not in range" "$TMP/bad.txt" ||
    { cat "$TMP/bad.txt"; echo "FAIL: '$args' gave rc=$rc without a clear error"; exit 1; }
done
echo "generate_engine: ok"
