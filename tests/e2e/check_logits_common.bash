# Shared by the tests/e2e scripts that run `portllm check-logits` (source it after setting src).
# logits_pass RC LAST: the run exited 0 and its last line is "max_abs_diff=X greedy_agree=N/N" with
# N > 0: every confident greedy token agreed with the reference, and there were some to compare.
logits_pass() {
  local rc=$1 last=$2
  [ "$rc" -eq 0 ] && [[ $last =~ ^max_abs_diff=[0-9.e+-]+\ greedy_agree=([0-9]+)/([0-9]+)$ ]] &&
    [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] && [ "${BASH_REMATCH[2]}" -gt 0 ]
}
