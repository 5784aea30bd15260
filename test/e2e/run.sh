#!/usr/bin/env bash
# npm run test:e2e — builds the bed if needed (cached), then runs the end-to-end tests on it.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash test/bed/build-k8s.sh
bash test/bed/images.sh
exec node --import tsx --test --test-concurrency=1 test/e2e/*.test.ts
