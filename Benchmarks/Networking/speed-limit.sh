#!/bin/sh
# Speed limits over 10 s (issue 25): `jobkit download` against Debian's nginx on loopback, with
# --max-overall-download-limit (one file, then four sharing it) and --max-download-limit; prints each
# run's measured rate against its limit. Uses the jobkit at $JOBKIT (default: the debug build; the
# limit, not the build, sets the pace).
#   Benchmarks/Networking/speed-limit.sh     (from the repository root; not part of CI)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
jobkit=${JOBKIT:-$root/.build/debug/jobkit}
port=${PORT:-18491}
work=$(mktemp -d /tmp/jobkit-speed.XXXXXX)
nginx_pid=
trap 'kill "$nginx_pid" 2>/dev/null || true; rm -rf "$work"' EXIT INT TERM
. "$(dirname "$0")/nginx.sh"
[ -x "$jobkit" ] || (cd "$root" && swift build --product jobkit >/dev/null)
mkdir -p "$work/root"
head -c 10485760 /dev/urandom > "$work/root/ten"           # 10 MiB: 10 s at 1 MiB/s
for i in 0 1 2 3; do head -c 5242880 /dev/urandom > "$work/root/five$i"; done   # 4 x 5 MiB: 10 s at 2 MiB/s
nginx_start "$work" "
    server {
        listen 127.0.0.1:$port;
        root $work/root;
    }" "http://127.0.0.1:$port/five0"

# run LABEL LIMIT_BYTES TOTAL_BYTES ARGS...: downloads, then prints the rate against the limit.
run() {
    label=$1 limit=$2 total=$3
    shift 3
    rm -rf "$work/out"
    start=$(date +%s.%N)
    "$jobkit" download -o "$work/out" --quiet "$@"
    end=$(date +%s.%N)
    python3 -c "
s = $end - $start; rate = $total / s
print(f'$label: {$total / 1048576:.0f} MiB in {s:.2f} s = {rate / 1024:.0f} KiB/s, limit {$limit / 1024:.0f} KiB/s, '
      f'{(rate / $limit - 1) * 100:+.1f}%')"
}
base=http://127.0.0.1:$port
run "overall 1M, one file" 1048576 10485760 --max-overall-download-limit 1M "$base/ten"
run "overall 2M, four files" 2097152 20971520 --max-overall-download-limit 2M \
    "$base/five0" "$base/five1" "$base/five2" "$base/five3"
run "per file 512K, four files" 2097152 20971520 --max-download-limit 512K \
    "$base/five0" "$base/five1" "$base/five2" "$base/five3"
