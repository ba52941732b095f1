#!/bin/bash
# Issue 8's measurement protocol (docs/PERFORMANCE.md): for each 1b-preset model the
# roofline, pp512 + tg128, and --parallel 1,8; then tg at depth 0 and 4096 with flash
# attention and q8_0 K/V. The two ratio targets run their rows interleaved (--interleave). Models are made on first use. Run on a quiet machine.
#   scripts/perf_protocol.sh [BUILD_DIR=build] [MODEL_DIR=/tmp]
set -euo pipefail
build=${1:-build}
dir=${2:-/tmp}
keel="$build/keel"
[ -x "$keel" ] || { echo "perf_protocol: $keel not built (make build)" >&2; exit 1; }
date
git log --oneline -1 2>/dev/null || true
for t in q4_0 q4_k_m q8_0 f16 bf16; do
  m="$dir/perf-1b-$t.gguf"
  [ -f "$m" ] || "$keel" make-model --preset 1b --type "$t" -o "$m"
  echo "=== $t"
  "$keel" bench --roofline -m "$m"
  "$keel" bench -m "$m" -p 512 -n 128 -r 3 --with-bounds
  "$keel" bench -m "$m" -p 0 -n 128 --parallel 1,8 -r 2 --interleave
done
echo "=== depth"
# Interleaved (a step of each row in turn): the ratio, not each row alone, is the target.
"$keel" bench -m "$dir/perf-1b-q4_0.gguf" -p 0 -n 128 -d 0,4096 -fa on -ctk q8_0 -ctv q8_0 -r 4 --interleave
# Not a target: a prompt at depth with the default f16 K/V and with q8_0 K/V (docs/PERFORMANCE.md).
"$keel" bench -m "$dir/perf-1b-q4_0.gguf" -p 512 -n 0 -d 4096 -fa on -r 2
"$keel" bench -m "$dir/perf-1b-q4_0.gguf" -p 512 -n 0 -d 4096 -fa on -ctk q8_0 -ctv q8_0 -r 2
date
