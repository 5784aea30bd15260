#!/usr/bin/env bash
# npm run test:e2e — builds the bed if needed (cached: apt packages, Kubernetes binaries, images),
# then runs the end-to-end tests: the whole bootstrap and join on real kubelets in bed hosts.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -n "${KUBECEPTION_BED_READY:-}" ] || bash test/bed/setup.sh
exec node --import tsx --test --test-concurrency=1 test/e2e/*.test.ts
