#!/usr/bin/env bash
# The lines of the download manager and its downloads that the simulation alone runs: the package's
# tests built with coverage (in .build-coverage, beside the usual build), only
# DownloadManagerSimulationTests run, and llvm-cov's line figures for
# Sources/JobKitNetworking/DownloadManager/ and Sources/JobKitNetworking/Download/, per file (the most
# lines not run first) and in all.
#
#   Benchmarks/simulation-coverage.sh [SCHEDULES]     (default 2,000; seed 1 unless JOBKIT_SIMULATION_SEED)
#
# Its last line: `simulation line coverage: P% (C of N lines)`. A clean build takes about five minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
schedules=${1:-2000}
scratch=.build-coverage
flags=(--scratch-path "$scratch" --enable-code-coverage -Xswiftc -wmo -Xswiftc -num-threads -Xswiftc "$(nproc)")
profiles=$(mktemp -d)
trap 'rm -rf "$profiles"' EXIT
if ! swift build --build-tests "${flags[@]}" >"$profiles/build.log" 2>&1; then
    cat "$profiles/build.log"
    exit 1
fi
bin=$(swift build --show-bin-path "${flags[@]}")
LLVM_PROFILE_FILE="$profiles/%p.profraw" JOBKIT_SIMULATION_SEED=${JOBKIT_SIMULATION_SEED:-1} \
    JOBKIT_SIMULATION_SCHEDULES="$schedules" \
    "$bin/JobKitPackageTests.xctest" --testing-library swift-testing --filter DownloadManagerSimulationTests |
    grep -a '^simulated'
# The toolchain's own LLVM tools: the profiles are in its format (the system's llvm-profdata may be older).
tools=$(dirname "$(readlink -f "$(command -v swift)")")
"$tools/llvm-profdata" merge -sparse "$profiles"/*.profraw -o "$profiles/merged.profdata"
sources=(Sources/JobKitNetworking/DownloadManager Sources/JobKitNetworking/Download)
"$tools/llvm-cov" report "$bin/JobKitPackageTests.xctest" -instr-profile "$profiles/merged.profdata" "${sources[@]}" |
    tee "$profiles/report" |
    awk 'NR > 2 && !/^-/ && !/^TOTAL/ { printf "%-72s %6d lines, %5d not run, %s\n", $1, $(NF-5), $(NF-4), $(NF-3) }' |
    sort -k4 -n -r
# TOTAL's columns: regions, missed, cover, functions, missed, executed, lines, missed, cover, ...
awk '/^TOTAL/ { printf "simulation line coverage: %s (%d of %d lines)\n", $10, $8 - $9, $8 }' "$profiles/report"
