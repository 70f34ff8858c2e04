#!/usr/bin/env bash
# Instructions per job (callgrind, release build), marginal from SMALL to LARGE jobs so that start-up
# cancels out, for JobKit beside raw GCD, the seed article's Task design and Swift's TaskGroup.
# Instruction counts repeat to ±0.2% for one thread's work; how GCD spreads work over its worker
# threads still varies from run to run (about ±5% per job), so each figure is the median of RUNS
# runs (default 3).
#
#   Benchmarks/instructions.sh [SMALL LARGE]      (default 10000 30000)
#   RUNS=5 Benchmarks/instructions.sh
set -euo pipefail
cd "$(dirname "$0")"
small=${1:-10000}
large=${2:-30000}
swift build -c release --product JobKitInstructions >/dev/null
binary=$(swift build -c release --show-bin-path)/JobKitInstructions
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

count() {  # workload size -> total instructions
    valgrind --tool=callgrind --callgrind-out-file="$scratch/out" "$binary" "$1" "$2" >/dev/null 2>"$scratch/log"
    grep -E "^summary:|^totals:" "$scratch/out" | head -1 | awk '{print $2}'
}

per_job() {
    local a b i samples=()
    for ((i = 0; i < ${RUNS:-3}; i++)); do
        a=$(count "$1" "$small")
        b=$(count "$1" "$large")
        samples+=($(((b - a) / (large - small))))
    done
    printf '%s\n' "${samples[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

printf '%-10s %10s %10s %10s %10s\n' "per job" "raw GCD" "seed Task" "TaskGroup" "JobKit"
for family in fanout sequence; do
    gcd=$(per_job "$family-gcd")
    seed=$(per_job "$family-seed")
    if [ "$family" = fanout ]; then taskgroup=$(per_job fanout-taskgroup); else taskgroup="-"; fi
    jobkit=$(per_job "$family-jobkit")
    printf '%-10s %10s %10s %10s %10s   JobKit/GCD %s×\n' "$family" "$gcd" "$seed" "$taskgroup" "$jobkit" \
        "$(awk -v a="$jobkit" -v b="$gcd" 'BEGIN { printf "%.2f", a / b }')"
done
