#!/usr/bin/env bash
# Instructions per unit of work (callgrind, release build), marginal from SMALL to LARGE units so that
# start-up cancels out, for JobKit beside raw GCD, the seed article's Task design and Swift's TaskGroup.
# Every unit is distinct — its own closure, capturing its index — as users make them; the "one job
# repeated" row performs a single job value N times (the figure issue 11 reported).
# Instruction counts repeat to ±0.2% for one thread's work; how GCD spreads work over its worker
# threads still varies from run to run (about ±5% per unit), so each figure is the median of RUNS
# runs (default 3).
#
#   Benchmarks/instructions.sh [SMALL LARGE]      (default 10000 30000)
#   RUNS=5 Benchmarks/instructions.sh
#   ONLY="fanout-jobkit sequence-jobkit" Benchmarks/instructions.sh    (those workloads, one per line)
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

per_unit() {
    local a b i samples=()
    for ((i = 0; i < ${RUNS:-3}; i++)); do
        a=$(count "$1" "$small")
        b=$(count "$1" "$large")
        samples+=($(((b - a) / (large - small))))
    done
    printf '%s\n' "${samples[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

if [ -n "${ONLY:-}" ]; then
    for workload in $ONLY; do printf '%-26s %8s\n' "$workload" "$(per_unit "$workload")"; done
    exit 0
fi

printf '%-10s %10s %10s %10s %10s %18s\n' "per unit" "raw GCD" "seed Task" "TaskGroup" "JobKit" "JobKit repeated"
for family in fanout sequence; do
    gcd=$(per_unit "$family-gcd")
    seed=$(per_unit "$family-seed")
    if [ "$family" = fanout ]; then taskgroup=$(per_unit fanout-taskgroup); else taskgroup="-"; fi
    jobkit=$(per_unit "$family-jobkit")
    repeated=$(per_unit "$family-jobkit-repeated")
    printf '%-10s %10s %10s %10s %10s %18s   JobKit/GCD %s×, seed/GCD %s×, repeated/GCD %s×\n' \
        "$family" "$gcd" "$seed" "$taskgroup" "$jobkit" "$repeated" \
        "$(ratio "$jobkit" "$gcd")" "$(ratio "$seed" "$gcd")" "$(ratio "$repeated" "$gcd")"
done
