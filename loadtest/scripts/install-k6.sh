#!/usr/bin/env bash
# Installs k6 into a directory (default ./.bin) from the Go module proxy when it is not there yet.
#   loadtest/scripts/install-k6.sh [dir]     -> prints the k6 path
# Needs Go >= 1.23 on PATH. Pinned version: K6_VERSION (default v1.8.1).
set -euo pipefail
dir=${1:-.bin}
version=${K6_VERSION:-v1.8.1}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
if [ -x "$dir/k6" ] && "$dir/k6" version 2>/dev/null | grep -q "${version#v}"; then
  echo "$dir/k6"
  exit 0
fi
if ! command -v go >/dev/null 2>&1; then
  echo "install-k6: go is not on PATH; install Go >= 1.23 (https://go.dev/dl/) or put k6 at $dir/k6" >&2
  exit 1
fi
echo "install-k6: go install go.k6.io/k6@$version -> $dir" >&2
GOBIN="$dir" GOPROXY="${GOPROXY:-https://proxy.golang.org,direct}" GOFLAGS=-mod=mod go install "go.k6.io/k6@$version"
"$dir/k6" version >&2
echo "$dir/k6"
