#!/usr/bin/env bash
# 64 concurrent streams each equal their sequential greedy result: batching, chunked prefill and
# stream assembly must not change what a request generates.
PORTLLM=$1
SRC=$2
source "$SRC/tests/e2e/server_common.bash"
N=64
start_server --max-num-seqs 64
wait_health
NAMES=(Lily Tom Sue Max Ben Amy Sam Mia)
prompt() { echo "Once upon a time, ${NAMES[$(($1 % 8))]} had $(($1 / 8)) red balls and"; }
for i in $(seq 0 $((N - 1))); do
  code=$(post /v1/completions "{\"prompt\": \"$(prompt $i)\", \"max_tokens\": 40, \"temperature\": 0}")
  [ "$code" = 200 ] || { fail "sequential $i: $code"; continue; }
  jq -r '.choices[0].text' "$WORK/body" >"$WORK/seq_$i"
done
pids=()
for i in $(seq 0 $((N - 1))); do
  curl -s -N --max-time 120 -H 'Content-Type: application/json' \
    -d "{\"prompt\": \"$(prompt $i)\", \"max_tokens\": 40, \"temperature\": 0, \"stream\": true}" \
    "$BASE/v1/completions" >"$WORK/sse_$i" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
same=0
for i in $(seq 0 $((N - 1))); do
  grep '^data: {' "$WORK/sse_$i" | sed 's/^data: //' | jq -j '.choices[0].text' >"$WORK/con_$i"
  echo >>"$WORK/con_$i"
  if [ "$(tail -1 "$WORK/sse_$i")" != "data: [DONE]" ] && ! grep -q 'data: \[DONE\]' "$WORK/sse_$i"; then fail "stream $i has no [DONE]"; fi
  if cmp -s "$WORK/seq_$i" "$WORK/con_$i"; then same=$((same + 1)); else
    fail "stream $i differs: seq=$(head -c 120 "$WORK/seq_$i") con=$(head -c 120 "$WORK/con_$i")"
  fi
done
echo "$same/$N concurrent streams equal their sequential result"

# bench serve with a shared prompt prefix: every request succeeds, and the prefix (4 full KV
# blocks) is served from the prefix cache for the requests after the first few.
metric() { curl -s --max-time 5 "$BASE/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
HITS0=$(metric portllm_prefix_cache_hits_total)
"$PORTLLM" bench serve --port "$PORT" --num-prompts 16 --max-concurrency 4 --random-prefix-len 64 \
  --random-input-len 16 --random-output-len 8 --random-vocab-size 500 >"$WORK/bench" 2>&1
HITS1=$(metric portllm_prefix_cache_hits_total)
ok_req=$(awk '/^Successful requests:/ {print $3}' "$WORK/bench")
if [ "$ok_req" = 16 ] && [ "$(( ${HITS1%.*} - ${HITS0%.*} ))" -ge $((8 * 64)) ]; then
  pass "bench serve --random-prefix-len: 16/16 requests, prefix cache hits $HITS0 -> $HITS1"
else
  fail "bench serve prefix: requests=$ok_req hits $HITS0 -> $HITS1 $(tail -5 "$WORK/bench")"
fi
[ "$same" = "$N" ] && [ "$FAILS" = 0 ]
