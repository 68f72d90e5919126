#!/usr/bin/env bash
# portllm serve driven by the official OpenAI Node SDK (tests/e2e/openai_client). Installs the
# SDK from the npm registry on first use (node_modules is git-ignored).
PORTLLM=$1
SRC=$2
source "$SRC/tests/e2e/server_common.bash"
CLIENT="$SRC/tests/e2e/openai_client"
if [ ! -d "$CLIENT/node_modules/openai" ]; then
  (cd "$CLIENT" && timeout 300 npm install --no-audit --no-fund --silent) || { echo "npm install of the openai SDK failed"; exit 1; }
fi
start_server --chat-template "$SRC/tests/data/server/chatml.jinja" --api-key sk-sdk --served-model-name stories
wait_health
timeout 300 node "$CLIENT/sdk_test.mjs" "$BASE" sk-sdk
rc=$?
grep -q "internal error" "$SERVER_LOG" && { echo "FAIL: server logged an internal error"; rc=1; }
exit $rc
