#!/usr/bin/env bash
# npm run test:e2e — builds the bed if needed (cached: apt packages, Kubernetes binaries, images),
# then runs the end-to-end suites (test/e2e/*.test.ts) on real kubelets in bed hosts.
#
# Suites boot their own, differently named hosts, so they run in two lanes at once (the machine has 2
# cores; a suite mostly waits on pods). Each suite's wall time is printed (`=== e2e <file>: N s, rc`),
# and the run fails if any suite fails. KUBECEPTION_E2E_LANES=1 runs them one after another;
# arguments name a subset of suite files.
set -uo pipefail
cd "$(dirname "$0")/../.."
[ -n "${KUBECEPTION_BED_READY:-}" ] || bash test/bed/setup.sh || exit 1

files=("$@")
((${#files[@]})) || mapfile -t files < <(ls test/e2e/*.test.ts)
lanes=${KUBECEPTION_E2E_LANES:-2}
logdir=$(mktemp -d /tmp/kc-e2e.XXXXXX)

# One lane: its suites one after another; per-suite time and exit code to stdout, output to a log file.
lane() {
  local rc=0
  for f in "$@"; do
    local name start r
    name=$(basename "$f" .test.ts); start=$SECONDS
    node --import tsx --test --test-concurrency=1 "$f" >"$logdir/$name.log" 2>&1; r=$?
    printf '=== e2e %s: %d s, rc %d\n' "$f" $((SECONDS - start)) "$r"
    ((r == 0)) || rc=1
  done
  return $rc
}

# Each suite goes to the lane with the least work so far, longest first. Weights: minutes measured
# on the bed (unlisted suites count 5).
declare -A minutes=([crash]=19 [certs]=18 [network]=14 [runtime-state]=11 [join]=10 [bootstrap]=8
  [recovery]=8 [reset]=8 [site]=6 [deno]=5)
declare -a lane_files lane_load
for ((l = 0; l < lanes; l++)); do lane_files[l]=""; lane_load[l]=0; done
while read -r _ f; do
  best=0
  for ((l = 1; l < lanes; l++)); do ((lane_load[l] < lane_load[best])) && best=$l; done
  name=$(basename "$f" .test.ts)
  lane_files[best]+="$f "; lane_load[best]=$((lane_load[best] + ${minutes[$name]:-5}))
done < <(for f in "${files[@]}"; do n=$(basename "$f" .test.ts); echo "${minutes[$n]:-5} $f"; done | sort -rn)
for ((l = 0; l < lanes; l++)); do echo "e2e lane $l (≈${lane_load[l]} min): ${lane_files[l]}"; done
pids=()
for ((l = 0; l < lanes; l++)); do
  # shellcheck disable=SC2086
  lane ${lane_files[l]:-} &
  pids+=($!)
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done

# Every suite's TAP output, then the node test runner's totals per suite.
for log in "$logdir"/*.log; do
  printf '\n----- %s\n' "$(basename "$log")"
  cat "$log"
done
printf '\n'
pass=$(cat "$logdir"/*.log | grep -E '^# pass ' | awk '{s+=$3} END {print s+0}')
fail=$(cat "$logdir"/*.log | grep -E '^# fail ' | awk '{s+=$3} END {print s+0}')
echo "e2e: $pass passed, $fail failed"
rm -rf "$logdir"
exit $status
