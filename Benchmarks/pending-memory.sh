#!/usr/bin/env bash
# Bytes per pending unit: the growth of peak resident memory while N units wait (default 1,000,000),
# divided by N — a raw GCD closure, the seed articles' Task and JobKit, side by side (release build).
# Every unit is distinct (its closure captures its index); the "one job repeated" row performs a single
# job value N times.
#
#   Benchmarks/pending-memory.sh [N]
set -euo pipefail
cd "$(dirname "$0")"
count=${1:-1000000}
swift build -c release --product JobKitInstructions >/dev/null
binary=$(swift build -c release --show-bin-path)/JobKitInstructions

printf '%-36s %10s %10s %10s\n' "bytes per pending" "raw GCD" "seed Task" "JobKit"
printf '%-36s %10s %10s %10s\n' "perform on an inactive queue" \
    "$("$binary" pending-gcd "$count")" "$("$binary" pending-seed "$count")" "$("$binary" pending-jobkit "$count")"
printf '%-36s %10s %10s %10s\n' "same, @MainActor handler (main queue)" "-" "-" "$("$binary" pending-jobkit-main "$count")"
printf '%-36s %10s %10s %10s\n' "same, one job repeated" "-" "-" "$("$binary" pending-jobkit-repeated "$count")"
printf '%-36s %10s %10s %10s\n' "sequence member" "-" \
    "$("$binary" pending-member-seed "$count")" "$("$binary" pending-member-jobkit "$count")"
