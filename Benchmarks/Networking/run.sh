#!/bin/sh
# Loopback download benchmarks at width 8: curl --parallel, aria2c, a plain URLSession program,
# JobKitNetworking and `jobkit download`, for 200 x 1 MiB and 8 x 100 MiB, against nginx (Debian's
# /usr/sbin/nginx) when it is installed. One run each; prints wall time, peak RSS and the connections
# nginx saw. aria2c is skipped (with a note) when it is not installed.
#   Benchmarks/Networking/run.sh            (from the repository root; not part of CI)
#   RUNS=3 SETS=small Benchmarks/Networking/run.sh   (repeat; only the 200 x 1 MiB set)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
width=8
port=${PORT:-18481}
work=$(mktemp -d /tmp/jobkit-netbench.XXXXXX)
nginx_pid=
trap 'kill "$nginx_pid" 2>/dev/null || true; rm -rf "$work"' EXIT INT TERM
. "$here/nginx.sh"

(cd "$here/.." && swift build -c release --product NetworkingBench >/dev/null)
bench="$(cd "$here/.." && swift build -c release --show-bin-path)/NetworkingBench"
(cd "$here/../.." && swift build -c release --product jobkit >/dev/null)
jobkit="$(cd "$here/../.." && swift build -c release --show-bin-path)/jobkit"
aria2c=$(command -v aria2c || true)
[ -n "$aria2c" ] || echo "aria2c not found: its rows are skipped (apt-get install aria2)" >&2

mkdir -p "$work/root" "$work/out"
for i in $(seq 0 199); do head -c 1048576 /dev/urandom > "$work/root/small$i"; done
for i in $(seq 0 7); do head -c 104857600 /dev/urandom > "$work/root/big$i"; done

nginx_start "$work" "
    server {
        listen 127.0.0.1:$port;
        root $work/root;
    }" "http://127.0.0.1:$port/small0"

# run NAME PREFIX COUNT COMMAND...: times COMMAND, counts nginx's connections, checks the files.
run() {
    name=$1 prefix=$2 count=$3
    shift 3
    rm -rf "$work/out" && mkdir -p "$work/out"
    : > "$work/logs/access.log"
    sync
    /usr/bin/time -f "%e %M %U %S" -o "$work/time" "$@" > /dev/null
    read -r wall rss user system < "$work/time"
    connections=$(sort -u "$work/logs/access.log" | wc -l)
    for i in $(seq 0 $((count - 1))); do
        cmp -s "$work/root/$prefix$i" "$work/out/$prefix$i" || { echo "$name: $prefix$i differs" >&2; exit 1; }
    done
    printf '| %-22s | %-13s | %7.2f s | %8.2f s | %6d MB | %11d |\n' "$name" "$count x $prefix" "$wall" \
        "$(echo "$user + $system" | bc)" "$((rss / 1024))" "$connections"
}

curl_config() {
    prefix=$1 count=$2
    for i in $(seq 0 $((count - 1))); do
        printf 'url = "http://127.0.0.1:%s/%s%d"\noutput = "%s/out/%s%d"\n' "$port" "$prefix" "$i" "$work" "$prefix" "$i"
    done > "$work/curl-$prefix.conf"
}
curl_config small 200
curl_config big 8

# An aria2 input file, which `jobkit download -i` reads too: a URL, then an indented out= line.
input_file() {
    prefix=$1 count=$2
    for i in $(seq 0 $((count - 1))); do
        printf 'http://127.0.0.1:%s/%s%d\n  out=%s%d\n' "$port" "$prefix" "$i" "$prefix" "$i"
    done > "$work/input-$prefix.txt"
}
input_file small 200
input_file big 8

echo "| program                | set           |      wall |       CPU | peak RSS | connections |"
echo "|------------------------|---------------|-----------|-----------|----------|-------------|"
for round in $(seq 1 "${RUNS:-1}"); do
    for set_name in ${SETS:-small big}; do
        case $set_name in small) files=200 ;; big) files=8 ;; *) echo "unknown set $set_name" >&2; exit 2 ;; esac
        url="http://127.0.0.1:$port/"
        run "curl --parallel" "$set_name" $files curl -s --no-progress-meter --parallel --parallel-max $width \
            -K "$work/curl-$set_name.conf"
        if [ -n "$aria2c" ]; then
            # One connection per file (-x 1 -s 1), no preallocation, as the others do.
            run "aria2c" "$set_name" $files "$aria2c" -q -j $width -x 1 -s 1 --file-allocation=none \
                --summary-interval=0 -d "$work/out" -i "$work/input-$set_name.txt"
        fi
        run "plain URLSession" "$set_name" $files "$bench" plain "$url" "$set_name" $files "$work/out" $width
        run "JobKit" "$set_name" $files "$bench" jobkit "$url" "$set_name" $files "$work/out" $width
        run "jobkit download" "$set_name" $files "$jobkit" download --quiet -j $width -o "$work/out" \
            -i "$work/input-$set_name.txt"
    done
done
