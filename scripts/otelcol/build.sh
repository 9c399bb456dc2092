#!/usr/bin/env bash
# Builds the OpenTelemetry Collector distribution in this folder (main.go, go.mod: the collector's Go modules at one
# pinned release) into a directory, unless a binary of this go.sum is already there.
#   scripts/otelcol/build.sh [dir]     -> prints the binary's path
# dir defaults to $PEMBA_TOOLS_DIR/otelcol, else .tools/otelcol in the repository (where .ci/run keeps its tools).
# Needs Go >= 1.24 on PATH and the Go module proxy; the first build takes a few minutes, later ones are a hash check.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-${PEMBA_TOOLS_DIR:-$here/../../.tools}/otelcol}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
stamp=$(cat "$here/go.sum" "$here/main.go" | sha256sum | cut -c1-16)
bin="$dir/pemba-otelcol"
if [ -x "$bin" ] && [ "$(cat "$dir/pemba-otelcol.stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "$bin"
  exit 0
fi
if ! command -v go >/dev/null 2>&1; then
  echo "otelcol build: go is not on PATH; install Go >= 1.24 (or set PEMBA_OTELCOL to a collector binary)" >&2
  exit 1
fi
echo "otelcol build: go build ($here) -> $bin" >&2
(cd "$here" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -o "$bin.tmp" .)
mv "$bin.tmp" "$bin"
echo "$stamp" >"$dir/pemba-otelcol.stamp"
"$bin" --version >&2
echo "$bin"
