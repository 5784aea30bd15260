#!/usr/bin/env bash
# npm run test:e2e — builds the bed if needed (cached: apt packages, Kubernetes binaries, images),
# then runs the end-to-end suites (test/e2e/*.test.ts) on real kubelets in bed hosts.
#
# Suites boot their own, differently named hosts, so they run in lanes at once (default two): a suite
# mostly waits on pods and rolls. Measured 2026-12-07 (cold CI of 432064a, 2 cores): with two lanes the
# cores were 21–61 % idle once the background Go builds were done (per-minute samples of /proc/stat).
# Three lanes (KUBECEPTION_E2E_LANES=3) were tried the same evening: every suite of the first two
# thirds passed about as fast as in two lanes, but the tail (upgrade, upgrade-chain, conformance-smoke
# at once) failed while a developer's network suite and a demo ran beside it (the API down ≈ 245 s in
# both upgrade suites, containerd's socket closed under an image import): not yet shown green in a
# clean run, so the default stays two. Tried again clean on 2026-12-08 (fresh clone of 16222c2, nothing
# else on the machine, images imported without their layer blobs): memory was no limit (≥ 11.9 GB
# available), 15 suites ended within 27 min (14 green), but the bootstrap suite's SIGSTOP surge test saw a 2639 ms
# /readyz gap (its claim: ≤ 2 s) at a load average of 13–24 — the three lanes take more than the two
# cores give a test of timing. Two it stays. Each suite's wall time is printed (`=== e2e <file>: N s, rc`),
# and the run fails if any gating suite fails. KUBECEPTION_E2E_LANES=N sets the lanes (1: one after
# another); arguments name a subset of suite files.
#
# NOT_GATING lists suites that have not yet passed on the merged code of main (written on branches
# that were merged at the end of a session): they run and their results are printed, marked
# "NOT GATING", but a failure does not fail the run. The list is a to-do, not a place to park tests:
# each entry names an open issue, and the entry goes as soon as the suite passes on main.
set -uo pipefail
cd "$(dirname "$0")/../.."
[ -n "${KUBECEPTION_BED_READY:-}" ] || bash test/bed/setup.sh || exit 1

files=("$@")
((${#files[@]})) || mapfile -t files < <(ls test/e2e/*.test.ts)
lanes=${KUBECEPTION_E2E_LANES:-2}
NOT_GATING=()
gating() { local n; for n in "${NOT_GATING[@]}"; do [[ $n == "$1" ]] && return 1; done; return 0; }
logdir=$(mktemp -d /tmp/kc-e2e.XXXXXX)

# KUBECEPTION_E2E_WAIT_FOR=<file>: the upgrade suites' versions are still being built (.ci/run starts
# test/bed/setup-upgrade.sh in the background); that build writes its exit code into <file>. The suites
# that need it (upgrade*) run last in their lanes and wait for the file; the others do not wait.
# KUBECEPTION_E2E_WAIT_FOR_CONFORMANCE=<file>: likewise for the conformance build (e2e.test, ginkgo, the
# images), which the conformance-smoke suite waits for.
wait_for=${KUBECEPTION_E2E_WAIT_FOR:-}
wait_for_conformance=${KUBECEPTION_E2E_WAIT_FOR_CONFORMANCE:-}
# The kubic suite waits too: its kubic worker starts with the chain's v1.34.4 kubelet (upgrade node).
build_file() { # build_file <suite>: the file it waits for, if any
  case $1 in
    upgrade* | kubic) echo "$wait_for" ;;
    conformance-smoke) echo "$wait_for_conformance" ;;
  esac
}
needs_build() { [[ -n $(build_file "$1") ]]; }
await_build() { # await_build <suite>: 0 once the build succeeded
  local t=$SECONDS f
  f=$(build_file "$1")
  while [[ ! -s $f ]]; do sleep 5; done
  printf '=== e2e %s waited %d s for its build (rc %s)\n' "$1" $((SECONDS - t)) "$(cat "$f")" | tee -a "$logdir/lanes.txt"
  [[ $(cat "$f") == 0 ]]
}

# One lane: its suites one after another; per-suite time and exit code to stdout, output to a log file.
lane() {
  local rc=0
  for f in "$@"; do
    local name start r
    name=$(basename "$f" .test.ts)
    if needs_build "$name" && ! await_build "$name"; then
      echo "its build (upgrade versions or conformance) failed: $name not run" >"$logdir/$name.log"
      printf '=== e2e %s: not run, rc 1\n' "$f" | tee -a "$logdir/lanes.txt"; rc=1; continue
    fi
    start=$SECONDS
    node --import tsx --test --test-concurrency=1 "$f" >"$logdir/$name.log" 2>&1; r=$?
    if gating "$name"; then
      printf '=== e2e %s: %d s, rc %d\n' "$f" $((SECONDS - start)) "$r" | tee -a "$logdir/lanes.txt"
      ((r == 0)) || rc=1
    else
      printf '=== e2e %s: %d s, rc %d (NOT GATING: not yet passed on merged main)\n' "$f" $((SECONDS - start)) "$r" | tee -a "$logdir/lanes.txt"
    fi
  done
  return $rc
}

# Each suite goes to the lane with the least work so far, longest first (LPT: the lanes end within one
# short suite of each other); in each lane the suites that wait for the upgrade build run after the
# others. (Until 2026-12-07 the waiting suites were placed first, which left the lanes ≈ 36 and 42 min.)
# Weights: each suite's seconds in the cold CI run of 2026-12-07 on a fresh clone of 432064a (two lanes,
# the upgrade versions and conformance builds beside the first 30 min; 121/121 in 41.4 min); unlisted
# suites count 300. The upgrade suite adds ≈ 90 s for the in-cluster node rollout (356 s alone; two more
# workers, two batches); conformance-smoke is its 3.6 min alone plus the lane's load.
declare -A seconds=([bootstrap]=636 [certs]=544 [hardening]=533 [upgrade-chain]=500 [upgrade]=400 [kubic]=315 [ha]=313
  [conformance-smoke]=260 [network]=254 [etcd-restore]=229 [crash]=225 [join]=214 [runtime-state]=170 [kubelet-serving]=156
  [reset]=143 [security]=138 [recovery]=133 [site]=62 [deno]=60)
declare -a lane_files lane_waiting lane_load
for ((l = 0; l < lanes; l++)); do lane_files[l]=""; lane_waiting[l]=""; lane_load[l]=0; done
while read -r _ f; do
  best=0
  for ((l = 1; l < lanes; l++)); do ((lane_load[l] < lane_load[best])) && best=$l; done
  name=$(basename "$f" .test.ts)
  if needs_build "$name"; then lane_waiting[best]+="$f "; else lane_files[best]+="$f "; fi
  lane_load[best]=$((lane_load[best] + ${seconds[$name]:-300}))
done < <(for f in "${files[@]}"; do n=$(basename "$f" .test.ts); echo "${seconds[$n]:-300} $f"; done | sort -k1,1rn)
for ((l = 0; l < lanes; l++)); do lane_files[l]+="${lane_waiting[l]}"; done
for ((l = 0; l < lanes; l++)); do echo "e2e lane $l (≈$((lane_load[l] / 60)) min): ${lane_files[l]}"; done | tee "$logdir/lanes.txt"
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
count() { # count <pass|fail> <logs…>: the node test runner's totals
  local what=$1; shift
  (($#)) || { echo 0; return; }
  cat "$@" | grep -E "^# $what " | awk '{s+=$3} END {print s+0}'
}
gate_logs=(); other_logs=()
for log in "$logdir"/*.log; do
  if gating "$(basename "$log" .log)"; then gate_logs+=("$log"); else other_logs+=("$log"); fi
done
if ((${#other_logs[@]})); then
  echo "e2e NOT GATING (${NOT_GATING[*]}): $(count pass "${other_logs[@]}") tests passed, $(count fail "${other_logs[@]}") tests failed"
fi
echo "e2e: $(count pass "${gate_logs[@]}") passed, $(count fail "${gate_logs[@]}") failed, $(count cancelled "${gate_logs[@]}") cancelled (a failed before hook cancels its suite's tests)"

# The summary again, short, last: each suite's time and exit code, and every failure that is not just
# "cancelled by its parent" (a failed hook shows as its suite's failure), its error and the stack's
# first lines — so the tail of a CI log says what failed. Also written to $KUBECEPTION_E2E_SUMMARY if set.
failures() { # failures <log>: each "not ok" block but the cancelled ones, at most 40 lines each
  awk '
    function flush() { if (n && !cancelled) for (i = 1; i <= n && i <= 40; i++) print buf[i]; n = 0; cancelled = 0 }
    /^ *not ok / { flush(); inblock = 1; instack = 0; n = 0 }
    inblock && /failureType: .cancelledByParent./ { cancelled = 1 }
    inblock && /^ *stack: / { instack = 1; stacklines = 0 }
    inblock { if (instack && stacklines++ > 4) next; buf[++n] = $0 }
    inblock && /^ *\.\.\.$/ { flush(); inblock = 0 }
    END { flush() }' "$1"
}
{
  printf '\n===== e2e summary\n'
  cat "$logdir/lanes.txt"
  for log in "${gate_logs[@]}" "${other_logs[@]}"; do
    grep -q '^ *not ok ' "$log" || continue
    printf -- '--- failures in %s\n' "$(basename "$log" .log)"
    failures "$log"
  done
} | tee ${KUBECEPTION_E2E_SUMMARY:+"$KUBECEPTION_E2E_SUMMARY"}
rm -rf "$logdir"
exit $status
