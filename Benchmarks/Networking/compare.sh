#!/bin/sh
# `jobkit download` against curl and aria2c in one run (issue 25): curl --parallel, aria2c -x 1 and
# -x 4, `jobkit download` -x 1 and -x 4, all at width 8 (-j 8), against Debian's nginx on loopback:
#   small    200 x 1 MiB
#   big      8 x 100 MiB
#   limited  2 x 100 MiB from a location that limits each connection (nginx limit_rate, $RATE, 20m)
# each over plain HTTP/1.1, HTTP/1.1 over TLS and HTTP/2 over TLS (a certificate authority and a
# certificate for 127.0.0.1 made here with openssl; curl --cacert, aria2c --ca-certificate, jobkit
# --ca-certificate; curl and jobkit --http1.1 for the HTTP/1.1 rows; aria2c speaks HTTP/1.1 only).
# $RUNS rounds (default 3), interleaved: every program once per round before the next round. Every
# copy is compared byte for byte. Prints one table: the median wall time (and each round's), the
# median of the per-round ratios to curl in the same round, the median CPU (user + system), the
# largest peak RSS and the connections nginx saw.
#   Benchmarks/Networking/compare.sh        (from the repository root; not part of CI; needs aria2c)
#   RUNS=1 SETS="small big" PROTOCOLS=http Benchmarks/Networking/compare.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
width=8
port=${PORT:-18483}
tls_port=$((port + 1))
rate=${RATE:-20m}
runs=${RUNS:-3}
sets=${SETS:-small big limited}
protocols=${PROTOCOLS:-http https-1.1 https-2}
work=$(mktemp -d /tmp/jobkit-compare.XXXXXX)
nginx_pid=
trap 'kill "$nginx_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
. "$here/nginx.sh"

if [ -z "${JOBKIT:-}" ]; then
    (cd "$root" && swift build -c release --product jobkit >/dev/null)
    JOBKIT="$(cd "$root" && swift build -c release --show-bin-path)/jobkit"
fi
aria2c=$(command -v aria2c) || { echo "aria2c not found: apt-get install aria2" >&2; exit 1; }

mkdir -p "$work/root" "$work/out" "$work/tls"
for i in $(seq 0 199); do head -c 1048576 /dev/urandom > "$work/root/small$i"; done
for i in $(seq 0 7); do head -c 104857600 /dev/urandom > "$work/root/big$i"; done

# A certificate authority, and the server's certificate for 127.0.0.1 signed by it.
(
    cd "$work/tls"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=bench CA" \
        -keyout ca.key -out ca.pem 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=127.0.0.1" \
        -keyout server.key -out server.csr 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n' > server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile server.ext \
        -out server.pem 2>/dev/null
)
ca=$work/tls/ca.pem

# The same folder on both ports; under /limited/ each connection gets at most $rate.
site="
        root $work/root;
        location /limited/ { alias $work/root/; limit_rate $rate; }"
nginx_start "$work" "
    server {
        listen 127.0.0.1:$port;$site
    }
    server {
        listen 127.0.0.1:$tls_port ssl http2;
        ssl_certificate $work/tls/server.pem;
        ssl_certificate_key $work/tls/server.key;$site
    }" "https://127.0.0.1:$tls_port/small0" "--cacert $ca"

# The files of a set, and where they are served.
files() {
    case $1 in
    small) prefix=small count=200 path= ;;
    big) prefix=big count=8 path= ;;
    limited) prefix=big count=2 path=limited/ ;;
    *) echo "unknown set $1" >&2; exit 2 ;;
    esac
}
base() {
    case $1 in
    http) echo "http://127.0.0.1:$port" ;;
    https-*) echo "https://127.0.0.1:$tls_port" ;;
    *) echo "unknown protocol $1" >&2; exit 2 ;;
    esac
}

# A curl config and an aria2 input file (which `jobkit download -i` reads too) per set and protocol.
for set_name in $sets; do
    files "$set_name"
    for protocol in $protocols; do
        url=$(base "$protocol")/$path
        for i in $(seq 0 $((count - 1))); do
            printf 'url = "%s%s%d"\noutput = "%s/out/%s%d"\n' "$url" "$prefix" "$i" "$work" "$prefix" "$i"
        done > "$work/curl-$set_name-$protocol.conf"
        for i in $(seq 0 $((count - 1))); do
            printf '%s%s%d\n  out=%s%d\n' "$url" "$prefix" "$i" "$prefix" "$i"
        done > "$work/input-$set_name-$protocol.txt"
    done
done

# measure ROUND SET PROTOCOL PROGRAM COMMAND...: runs COMMAND into an empty out/, checks every copy,
# appends a line to results.tsv.
measure() {
    round=$1 set_name=$2 protocol=$3 program=$4
    shift 4
    files "$set_name"
    rm -rf "$work/out" && mkdir -p "$work/out"
    : > "$work/logs/access.log"
    sync
    if ! /usr/bin/time -f "%e %M %U %S" -o "$work/time" "$@" > "$work/output" 2>&1; then
        echo "$program, $set_name, $protocol failed:" >&2
        cat "$work/output" >&2
        exit 1
    fi
    read -r wall rss user system < "$work/time"
    connections=$(sort -u "$work/logs/access.log" | wc -l)
    for i in $(seq 0 $((count - 1))); do
        cmp -s "$work/root/$prefix$i" "$work/out/$prefix$i" || {
            echo "$program, $set_name, $protocol: $prefix$i differs" >&2
            exit 1
        }
    done
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$set_name" "$protocol" "$program" "$wall" \
        "$(echo "$user + $system" | bc)" "$rss" "$connections" >> "$work/results.tsv"
    printf '%s %s %s %s: %s s\n' "$round" "$set_name" "$protocol" "$program" "$wall" >&2
}

cat "$work"/root/* > /dev/null  # the page cache holds every file before the first round
for round in $(seq 1 "$runs"); do
    for set_name in $sets; do
        for protocol in $protocols; do
            # Over HTTP/1.1 curl opens its connections at once (--parallel-immediate: without it, it
            # waits for the first connection to learn whether it can multiplex, and a set of two files
            # ran one after the other); over HTTP/2 it multiplexes on one, as jobkit does.
            curl_version=--parallel-immediate jobkit_version=
            case $protocol in
            https-1.1) curl_version="--http1.1 --parallel-immediate" jobkit_version=--http1.1 ;;
            https-2) curl_version=--http2 ;;
            esac
            conf=$work/curl-$set_name-$protocol.conf
            input=$work/input-$set_name-$protocol.txt
            case $protocol in
            https-*)
                # shellcheck disable=SC2086 # the options are words
                set -- --cacert "$ca"
                aria2_tls="--ca-certificate=$ca"
                jobkit_tls="--ca-certificate $ca"
                ;;
            *) set -- && aria2_tls= jobkit_tls= ;;
            esac
            # shellcheck disable=SC2086 # the options are words
            measure "$round" "$set_name" "$protocol" "curl --parallel" curl -s --no-progress-meter $curl_version "$@" \
                --parallel --parallel-max $width -K "$conf"
            for x in 1 4; do
                # shellcheck disable=SC2086
                measure "$round" "$set_name" "$protocol" "aria2c -x $x" "$aria2c" -q -j $width -x $x -s $x -k 1M \
                    --file-allocation=none --summary-interval=0 $aria2_tls -d "$work/out" -i "$input"
            done
            for x in 1 4; do
                # shellcheck disable=SC2086
                measure "$round" "$set_name" "$protocol" "jobkit download -x $x" "$JOBKIT" download --quiet \
                    -j $width -x $x $jobkit_version $jobkit_tls -o "$work/out" -i "$input"
            done
        done
    done
done

python3 - "$work/results.tsv" <<'PYTHON'
import statistics, sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])]
sets = {"small": "200 × 1 MiB", "big": "8 × 100 MiB", "limited": "2 × 100 MiB, 20 MiB/s a connection"}
protocols = {"http": "HTTP/1.1", "https-1.1": "HTTP/1.1 + TLS", "https-2": "HTTP/2 + TLS"}
runs = {}
for round_, set_name, protocol, program, wall, cpu, rss, connections in rows:
    runs.setdefault((set_name, protocol, program), []).append(
        (int(round_), float(wall), float(cpu), int(rss) // 1024, int(connections)))
print("| set | protocol | program | wall, median (each round) | ÷ curl, same round (median) | CPU | peak RSS | connections |")
print("|---|---|---|---|---|---|---|---|")
for (set_name, protocol, program), measured in runs.items():
    # measured: (round, wall, cpu, rss, connections) per round
    curl = {m[0]: m[1] for m in runs[(set_name, protocol, "curl --parallel")]}
    walls = [m[1] for m in measured]
    ratios = [m[1] / curl[m[0]] for m in measured if curl.get(m[0])]
    conns = sorted({m[4] for m in measured})
    label = program + (" (HTTP/1.1)" if protocol == "https-2" and program.startswith("aria2c") else "")
    print(f"| {sets[set_name]} | {protocols[protocol]} | {label} | {statistics.median(walls):.2f} s "
          f"({', '.join(f'{w:.2f}' for w in walls)}) | {statistics.median(ratios):.2f}× | "
          f"{statistics.median(m[2] for m in measured):.2f} s | {max(m[3] for m in measured)} MB | "
          f"{conns[0] if len(conns) == 1 else f'{conns[0]}–{conns[-1]}'} |")
PYTHON
