#!/bin/bash
# A/B alternating: `pemba import` of the same dump into a new SQLite file by two builds of the CLI, for a ratio that
# holds on a shared machine (run it at low priority, e.g. under `nice -n 19`):
#
#   A=<checkout>/packages/node-server/dist/pemba.mjs B=packages/node-server/dist/pemba.mjs \
#     DUMP=d1m.ndjson ROWS=1000000 ROUNDS=3 loadtest/bench-dump-ab.sh
#
# DUMP is a dump of ROWS rows (`loadtest/bench-dump.ts --rows 1000000 --dump-only d1m.ndjson`). Prints per round and
# side: wall seconds, CPU seconds (user + system), rows per CPU second and peak RSS, from /usr/bin/time.
set -eu
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for round in $(seq 1 "${ROUNDS:-3}"); do
  for side in A B; do
    cli=$A
    [ "$side" = B ] && cli=$B
    rm -f "$work"/ab.sqlite*
    out=$({ /usr/bin/time -f "TIME %e %M %U %S" node "$cli" import --database "$work/ab.sqlite" --tenant bench \
      --checkpoint "$work/ab.checkpoint" "$DUMP" 2>&1 >/dev/null; } 2>&1 | grep TIME)
    read -r _ wall rss user sys <<<"$out"
    cpu=$(echo "$user + $sys" | bc)
    echo "round $round $side import: wall ${wall} s, cpu ${cpu} s, $(echo "$ROWS / $cpu" | bc) rows per CPU s, peak RSS $((rss / 1024)) MB, load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
