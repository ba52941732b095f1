#!/bin/bash
# A/B of two keel binaries under perf: alternates them ROUNDS times on the same `keel bench`
# arguments and prints, per run, the t/s column and the perf sample counts (both threads)
# in the matmul kernels, the thread-pool waits and the rest. CPU samples move far less with
# this VM's memory-bandwidth swings than t/s does (docs/PERFORMANCE.md).
#   bench/ab_samples.sh 2 old/keel new/keel -m model.gguf -p 0 -n 256 -r 2
set -euo pipefail
if [ $# -lt 4 ]; then
  echo "usage: $0 ROUNDS KEEL_A KEEL_B BENCH_ARGS..." >&2
  exit 2
fi
rounds=$1 a=$2 b=$3
shift 3
data=$(mktemp)
trap 'rm -f "$data"' EXIT
for _ in $(seq "$rounds"); do
  for side in A B; do
    bin=$a
    [ "$side" = B ] && bin=$b
    ts=$(perf record -q -o "$data" "$bin" bench "$@" -o csv 2>/dev/null | tail -n +2 | cut -d, -f12 | tr '\n' ' ')
    perf report -i "$data" --no-children --sort sym --stdio -n 2>/dev/null |
      awk -v side="$side" -v ts="$ts" '/^ +[0-9.]+%/ {
          total += $2
          if ($0 ~ /tiled|legacy_rows|k4_rows|q6_k_rows|matmul_half/) kernels += $2
          else if ($0 ~ /wait_for/) waits += $2
          else if ($0 ~ /pack_block/) packing += $2
        }
        END { printf "%s t/s %s samples %d kernels %d waits %d other %d\n", side, ts, total, kernels, waits, total - kernels - waits - packing }'
  done
done
