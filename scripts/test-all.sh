#!/usr/bin/env bash
# Runs every check: type-check, lint, then all test suites. Prints a final "N passed, N failed" line.
set -uo pipefail
cd "$(dirname "$0")/.."
passed=0; failed=0
step() { local name=$1; shift; echo "== $name"; if "$@"; then passed=$((passed+1)); else failed=$((failed+1)); echo "!! $name failed"; fi; }
step typecheck pnpm -s typecheck
step lint pnpm -s lint
out=$(mktemp)
NO_COLOR=1 FORCE_COLOR=0 pnpm -s vitest run --reporter=default 2>&1 | tee "$out"
sed -i 's/\x1b\[[0-9;]*m//g' "$out"
# vitest prints "Tests  N passed | M failed (T)"
tests_line=$(grep -E '^\s*Tests\s' "$out" | tail -1)
tp=$(echo "$tests_line" | grep -oE '[0-9]+ passed' | grep -oE '[0-9]+' || echo 0)
tf=$(echo "$tests_line" | grep -oE '[0-9]+ failed' | grep -oE '[0-9]+' || echo 0)
if ! grep -qE '^\s*Tests\s' "$out"; then tf=$((tf+1)); fi
if grep -qE 'Test Files .*failed' "$out" && [ "${tf:-0}" = 0 ]; then tf=1; fi
passed=$((passed+${tp:-0})); failed=$((failed+${tf:-0}))
rm -f "$out"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
