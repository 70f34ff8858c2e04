#!/bin/sh
# Several connections per file (issue 25): `jobkit download` of one 64 MiB file from Debian's nginx on
# loopback limiting each connection (limit_rate, default 8m), with -x 1 and -x 4, and aria2c the same
# when it is installed; checks every copy byte for byte and prints the times. Uses the jobkit at
# $JOBKIT (default: the debug build; the per-connection limit, not the build, sets the pace).
#   Benchmarks/Networking/connections.sh     (from the repository root; not part of CI)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
jobkit=${JOBKIT:-$root/.build/debug/jobkit}
port=${PORT:-18492}
rate=${RATE:-8m}
size_mib=${SIZE_MIB:-64}
work=$(mktemp -d /tmp/jobkit-connections.XXXXXX)
nginx_pid=
trap 'kill "$nginx_pid" 2>/dev/null || true; rm -rf "$work"' EXIT INT TERM
. "$(dirname "$0")/nginx.sh"
[ -x "$jobkit" ] || (cd "$root" && swift build --product jobkit >/dev/null)
mkdir -p "$work/root"
head -c $((size_mib * 1048576)) /dev/urandom > "$work/root/big"
head -c 1 /dev/urandom > "$work/root/small"  # answers at once: nginx is up
nginx_start "$work" "
    server {
        listen 127.0.0.1:$port;
        root $work/root;
        limit_rate $rate;
    }" "http://127.0.0.1:$port/small"

# run LABEL COMMAND...: runs it into a fresh folder, checks the copy, prints the time.
run() {
    label=$1
    shift
    rm -rf "$work/out"
    mkdir -p "$work/out"
    start=$(date +%s.%N)
    "$@" >/dev/null 2>&1
    end=$(date +%s.%N)
    cmp -s "$work/root/big" "$work/out/big" || { echo "$label: the copy differs" >&2; exit 1; }
    python3 -c "print(f'$label: {$size_mib} MiB in {$end - $start:.2f} s')"
}
url=http://127.0.0.1:$port/big
run "jobkit -x 1" "$jobkit" download -o "$work/out" --quiet -x 1 "$url"
run "jobkit -x 4" "$jobkit" download -o "$work/out" --quiet -x 4 "$url"
if command -v aria2c >/dev/null; then
    run "aria2c -x 1" aria2c -d "$work/out" -x 1 -s 1 --allow-overwrite=true "$url"
    run "aria2c -x 4" aria2c -d "$work/out" -x 4 -s 4 -k 1M --allow-overwrite=true "$url"
fi
