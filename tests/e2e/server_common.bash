# Shared by tests/e2e/server_*.sh: start `portllm serve` on a free loopback port, wait for
# /health, stop it at exit. Every wait is bounded. Usage (after setting PORTLLM and SRC):
#   start_server [serve flags...]   -> sets SERVER_PID, PORT, BASE, SERVER_LOG
#   wait_health                     -> fails after 60 s
set -u
WORK=$(mktemp -d)
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill "$SERVER_PID" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$SERVER_PID" 2>/dev/null
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

FAILS=0
fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
pass() { echo "ok: $*"; }

# --port 0: the kernel picks a free port; the server prints it.
start_server() {
  SERVER_LOG="$WORK/server.log"
  "$PORTLLM" serve --host 127.0.0.1 --port 0 "$@" >"$SERVER_LOG" 2>&1 &
  SERVER_PID=$!
  PORT=""
  for _ in $(seq 300); do
    PORT=$(sed -n 's#.*listening on http://127\.0\.0\.1:\([0-9]*\).*#\1#p' "$SERVER_LOG" | head -1)
    [ -n "$PORT" ] && break
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$PORT" ]; then echo "server did not start:"; cat "$SERVER_LOG"; exit 1; fi
  BASE="http://127.0.0.1:$PORT"
}

wait_health() {
  for _ in $(seq 600); do
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$BASE/health")
    [ "$code" = 200 ] && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "server not healthy:"; cat "$SERVER_LOG"; exit 1
}

stop_server() {
  kill "$SERVER_PID" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
  SERVER_PID=""
}

# post PATH JSON [extra curl args] -> body in $WORK/body, status echoed
post() {
  local path=$1 body=$2
  shift 2
  curl -s --max-time 60 -o "$WORK/body" -w '%{http_code}' -H 'Content-Type: application/json' "$@" -d "$body" "$BASE$path"
}

# expect_status NAME CODE PATH JSON [curl args]: checks the status and the OpenAI error envelope.
expect_error() {
  local name=$1 want=$2
  shift 2
  local got
  got=$(post "$@")
  if [ "$got" != "$want" ]; then fail "$name: status $got, want $want: $(head -c 300 "$WORK/body")"; return; fi
  if ! jq -e '.error.message and .error.type and (.error | has("param")) and (.error | has("code"))' "$WORK/body" >/dev/null 2>&1; then
    fail "$name: no error envelope: $(head -c 300 "$WORK/body")"; return
  fi
  pass "$name ($want)"
}
