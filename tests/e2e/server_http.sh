#!/usr/bin/env bash
# portllm serve over raw HTTP (curl) on stories260K: loading state, auth, every client-error case
# of the robustness list (4xx with the OpenAI envelope), streaming framing, info routes, and a
# client disconnect that must abort the request and free its KV blocks (seen in /metrics).
PORTLLM=$1
SRC=$2
source "$SRC/tests/e2e/server_common.bash"
KEY=sk-e2e-test
AUTH=(-H "Authorization: Bearer $KEY")

start_server --chat-template "$SRC/tests/data/server/chatml.jinja" --api-key "$KEY" --max-request-bytes 8192 \
  --load-delay-ms 1500 --served-model-name stories
code=$(curl -s -o "$WORK/h" -w '%{http_code}' --max-time 2 "$BASE/health")
[ "$code" = 503 ] && pass "health 503 while loading" || fail "health while loading: $code"
expect_error "completion while loading" 503 /v1/completions '{"prompt": "x"}' "${AUTH[@]}"
wait_health
pass "health 200 after load"

# Authentication: /health is public, the API is not.
expect_error "missing api key" 401 /v1/completions '{"prompt": "Once"}'
expect_error "wrong api key" 401 /v1/completions '{"prompt": "Once"}' -H "Authorization: Bearer sk-e2e-tesT"
code=$(curl -s -o /dev/null -w '%{http_code}' "$BASE/health")
[ "$code" = 200 ] && pass "health public" || fail "health with api key: $code"

# Client mistakes: 4xx, never 5xx.
expect_error "invalid json" 400 /v1/completions '{"prompt": "x",' "${AUTH[@]}"
expect_error "non-object body" 400 /v1/completions '["x"]' "${AUTH[@]}"
expect_error "wrong field type" 400 /v1/completions '{"prompt": "x", "max_tokens": "10"}' "${AUTH[@]}"
expect_error "wrong prompt type" 400 /v1/completions '{"prompt": {"a": 1}}' "${AUTH[@]}"
expect_error "empty prompt" 400 /v1/completions '{"prompt": ""}' "${AUTH[@]}"
expect_error "empty prompt list" 400 /v1/completions '{"prompt": []}' "${AUTH[@]}"
expect_error "empty messages" 400 /v1/chat/completions '{"messages": []}' "${AUTH[@]}"
expect_error "unknown model" 404 /v1/completions '{"model": "gpt-9", "prompt": "x"}' "${AUTH[@]}"
LONG=$(python3 -c 'print([300] * 600)')
expect_error "prompt over context" 400 /v1/completions "{\"prompt\": $LONG}" "${AUTH[@]}"
code=$(post /v1/completions "{\"prompt\": $LONG, \"stream\": true}" "${AUTH[@]}")
if [ "$code" = 400 ] && ! grep -q '^data:' "$WORK/body"; then pass "prompt over context, streaming: 400 before any event"; else fail "streaming over context: $code $(head -c 200 "$WORK/body")"; fi
expect_error "prompt + max_tokens over context" 400 /v1/completions '{"prompt": "Once upon a time", "max_tokens": 510}' "${AUTH[@]}"
expect_error "chat prompt + max_tokens over context" 400 /v1/chat/completions '{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1000}' "${AUTH[@]}"
expect_error "temperature < 0" 400 /v1/completions '{"prompt": "x", "temperature": -1}' "${AUTH[@]}"
expect_error "top_p > 1" 400 /v1/completions '{"prompt": "x", "top_p": 1.5}' "${AUTH[@]}"
expect_error "top_k < -1" 400 /v1/completions '{"prompt": "x", "top_k": -5}' "${AUTH[@]}"
expect_error "presence_penalty > 2" 400 /v1/chat/completions '{"messages": [{"role": "user", "content": "hi"}], "presence_penalty": 3}' "${AUTH[@]}"
expect_error "n = 0" 400 /v1/completions '{"prompt": "x", "n": 0}' "${AUTH[@]}"
expect_error "out-of-vocabulary ids" 400 /v1/completions '{"prompt": [1, 512]}' "${AUTH[@]}"
expect_error "negative token id" 400 /v1/completions '{"prompt": [[1, -3]]}' "${AUTH[@]}"
expect_error "bad logit_bias key" 400 /v1/completions '{"prompt": "x", "logit_bias": {"abc": 5}}' "${AUTH[@]}"
expect_error "logit_bias key out of vocab" 400 /v1/completions '{"prompt": "x", "logit_bias": {"100000": 5}}' "${AUTH[@]}"
expect_error "empty stop string" 400 /v1/completions '{"prompt": "x", "stop": ["ok", ""]}' "${AUTH[@]}"
BIG=$(head -c 10000 /dev/zero | tr '\0' 'a')
expect_error "body over --max-request-bytes" 413 /v1/completions "{\"prompt\": \"$BIG\"}" "${AUTH[@]}"
expect_error "unknown route" 404 /v1/embeddings '{"input": "x"}' "${AUTH[@]}"

# Successful requests.
code=$(post /v1/completions '{"model": "stories", "prompt": "Once upon a time", "max_tokens": 20, "temperature": 0, "n": 2, "logprobs": 2, "seed": 1}' "${AUTH[@]}")
if [ "$code" = 200 ] && jq -e '.choices | length == 2' "$WORK/body" >/dev/null && jq -e '.usage.completion_tokens > 0 and (.choices[0].logprobs.tokens | length) > 0' "$WORK/body" >/dev/null; then
  pass "completion (n=2, logprobs)"
else fail "completion: $code $(head -c 400 "$WORK/body")"; fi
code=$(post /v1/completions '{"prompt": ["Once upon a time", "The cat"], "max_tokens": 8, "temperature": 0, "echo": true}' "${AUTH[@]}")
if [ "$code" = 200 ] && jq -e '(.choices | length == 2) and (.choices[1].text | startswith("The cat"))' "$WORK/body" >/dev/null; then pass "completion list of prompts + echo"; else fail "prompt list: $code $(head -c 300 "$WORK/body")"; fi
code=$(post /v1/chat/completions '{"messages": [{"role": "user", "content": "Tell me a story"}], "max_completion_tokens": 16, "temperature": 0}' "${AUTH[@]}")
if [ "$code" = 200 ] && jq -e '.choices[0].message.role == "assistant" and (.choices[0].message.content | type == "string")' "$WORK/body" >/dev/null; then pass "chat completion"; else fail "chat: $code $(head -c 300 "$WORK/body")"; fi

# Streaming framing: data events, usage chunk, [DONE] last.
curl -s -N --max-time 60 "${AUTH[@]}" -H 'Content-Type: application/json' -d '{"prompt": "Once upon a time", "max_tokens": 12, "temperature": 0, "stream": true, "stream_options": {"include_usage": true}}' "$BASE/v1/completions" >"$WORK/sse"
last=$(grep '^data:' "$WORK/sse" | tail -1)
usage=$(grep '^data:' "$WORK/sse" | tail -2 | head -1 | sed 's/^data: //')
if [ "$last" = "data: [DONE]" ] && echo "$usage" | jq -e '.usage.completion_tokens == 12 and (.choices | length == 0)' >/dev/null; then pass "stream framing + usage"; else fail "stream: $(head -c 500 "$WORK/sse")"; fi
curl -s -N --max-time 60 "${AUTH[@]}" -H 'Content-Type: application/json' -d '{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8, "stream": true}' "$BASE/v1/chat/completions" >"$WORK/sse"
if grep -q '"role":"assistant"' "$WORK/sse" && [ "$(grep '^data:' "$WORK/sse" | tail -1)" = "data: [DONE]" ]; then pass "chat stream"; else fail "chat stream: $(head -c 300 "$WORK/sse")"; fi
if python3 -c 'import sys; open(sys.argv[1], "rb").read().decode("utf-8")' "$WORK/sse"; then pass "stream is valid UTF-8"; else fail "invalid UTF-8 in stream"; fi

# Info routes.
code=$(curl -s -o "$WORK/body" -w '%{http_code}' "${AUTH[@]}" "$BASE/v1/models")
[ "$code" = 200 ] && jq -e '.data[0].id == "stories"' "$WORK/body" >/dev/null && pass "models" || fail "models: $code"
code=$(post /tokenize '{"prompt": "Once upon a time"}' "${AUTH[@]}")
TOKS=$(jq -c .tokens "$WORK/body")
code2=$(post /detokenize "{\"tokens\": $TOKS}" "${AUTH[@]}")
[ "$code" = 200 ] && [ "$code2" = 200 ] && jq -e '.prompt | contains("Once upon a time")' "$WORK/body" >/dev/null && pass "tokenize/detokenize" || fail "tokenize: $code $code2 $(cat "$WORK/body")"

# Disconnect: a long streamed request whose client goes away is aborted; its blocks come back.
metric() { curl -s --max-time 5 "$BASE/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
TOTAL=$(metric portllm_kv_blocks_total)
ABORTED0=$(curl -s "$BASE/metrics" | awk '/^portllm_request_success_total\{outcome="aborted"\}/ {print $2}')
curl -s -N --max-time 1 "${AUTH[@]}" -H 'Content-Type: application/json' \
  -d '{"prompt": "Once upon a time", "max_tokens": 480, "n": 64, "ignore_eos": true, "temperature": 1, "stream": true}' \
  "$BASE/v1/completions" >"$WORK/cut" 2>/dev/null
ok=0
for _ in $(seq 200); do
  RUNNING=$(metric portllm_num_requests_running)
  FREE=$(metric portllm_kv_blocks_free)
  if [ "${RUNNING%.*}" = 0 ] && [ "$FREE" = "$TOTAL" ]; then ok=1; break; fi
  sleep 0.1
done
ABORTED1=$(curl -s "$BASE/metrics" | awk '/^portllm_request_success_total\{outcome="aborted"\}/ {print $2}')
if [ $ok = 1 ] && [ "$(grep -c '^data:' "$WORK/cut")" -gt 0 ] && [ "${ABORTED1%.*}" -gt "${ABORTED0%.*}" ]; then
  pass "disconnect aborts (aborted $ABORTED0 -> $ABORTED1, free blocks $FREE/$TOTAL)"
else
  fail "disconnect: running=$RUNNING free=$FREE total=$TOTAL aborted $ABORTED0 -> $ABORTED1"
fi
if grep -q "internal error" "$SERVER_LOG"; then fail "server logged an internal error"; fi

echo "failures: $FAILS"
[ "$FAILS" = 0 ]
