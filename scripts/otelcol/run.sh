#!/usr/bin/env bash
# Starts the project's OpenTelemetry Collector (scripts/otelcol/main.go) with a configuration file, building it
# first when needed (build.sh). PEMBA_OTELCOL names a collector binary to run instead of building one.
#   scripts/otelcol/run.sh CONFIG.yaml      (the collector runs in this process: stop it with SIGTERM)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
config=${1:?usage: run.sh CONFIG.yaml}
if [ -n "${PEMBA_OTELCOL:-}" ]; then
  bin=$PEMBA_OTELCOL
  [ -x "$bin" ] || { echo "otelcol run: PEMBA_OTELCOL=$bin is not an executable" >&2; exit 1; }
else
  bin=$(bash "$here/build.sh")
fi
exec "$bin" --config "$config"
