#!/bin/sh
# Runs perf/bench_block over a list of token counts and prints the ratio lines of
# each run, one block of lines per size. Extra arguments go to every run.
#
#   perf/sweep.sh                          # 1 000, 2 340 and 4 000 tokens
#   TOKENS="1000 3000" perf/sweep.sh --only graph --blocks 1
#
# Build first with `make perf`. Each 1.3B-shape run takes minutes on a small machine.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
bench=${BENCH:-$here/bench_block}
[ -x "$bench" ] || { echo "sweep: $bench not built (run make perf)" >&2; exit 1; }

for n in ${TOKENS:-1000 2340 4000}; do
  echo "== $n tokens"
  "$bench" --tokens "$n" "$@" | sed -n '/^RATIOS/,/^$/p;/^config:/p;/^total/p'
done
