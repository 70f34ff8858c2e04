#!/usr/bin/env bash
# Wall time beside raw GCD: a fan-out of N units (default 100,000) and a sequence of M (default
# 1,000,000), each unit distinct, in ROUNDS rounds (default 5) that interleave the variants, one process
# per measurement (release build). Prints each variant's median in milliseconds and its ratio to raw
# GCD. A shared machine's noise moves single rounds by tens of percent: read the medians.
#
#   Benchmarks/wall-time.sh [N M]
#   ROUNDS=9 Benchmarks/wall-time.sh
set -euo pipefail
cd "$(dirname "$0")"
fanout=${1:-100000}
sequence=${2:-1000000}
rounds=${ROUNDS:-5}
swift build -c release --product JobKitInstructions >/dev/null
binary=$(swift build -c release --show-bin-path)/JobKitInstructions
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

variants="gcd seed jobkit jobkit-repeated"
for ((round = 0; round < rounds; round++)); do
    for variant in $variants; do
        "$binary" "fanout-$variant" "$fanout" --time >>"$scratch/fanout-$variant"
        "$binary" "sequence-$variant" "$sequence" --time >>"$scratch/sequence-$variant"
    done
done

median() { sort -n "$1" | awk '{ v[NR] = $1 } END { printf "%.1f", v[int((NR + 1) / 2)] / 1000 }'; }

printf '%-34s %10s %10s %10s %16s\n' "median of $rounds rounds, ms" "raw GCD" "seed Task" "JobKit" "JobKit repeated"
for family in fanout sequence; do
    [ "$family" = fanout ] && label="fan-out of $fanout" || label="sequence of $sequence"
    gcd=$(median "$scratch/$family-gcd")
    seed=$(median "$scratch/$family-seed")
    jobkit=$(median "$scratch/$family-jobkit")
    repeated=$(median "$scratch/$family-jobkit-repeated")
    printf '%-34s %10s %10s %10s %16s   JobKit/GCD %s×\n' "$label" "$gcd" "$seed" "$jobkit" "$repeated" \
        "$(awk -v a="$jobkit" -v b="$gcd" 'BEGIN { printf "%.2f", a / b }')"
done
