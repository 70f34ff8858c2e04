#!/usr/bin/env bash
# wrk against `jobkit serve` (release) and nginx on the same 1 MiB file, in one session, alternating
# runs so that both see the same machine. Not part of CI. Needs Debian's wrk and nginx.
#
#   Benchmarks/server-wrk.sh [rounds] [seconds] [connections]
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
SECONDS_PER_RUN=${2:-10}
CONNECTIONS=${3:-16}
JOBKIT_PORT=18480
NGINX_PORT=18481

swift build -c release --product jobkit --scratch-path .build-release >/dev/null 2>&1
BIN=$(swift build -c release --product jobkit --scratch-path .build-release --show-bin-path)/jobkit

WORK=$(mktemp -d /tmp/jobkit-wrk.XXXXXX)
chmod 755 "$WORK" # nginx's workers run as another user
mkdir -p "$WORK/root/files" "$WORK/nginx/logs"
head -c $((1 << 20)) /dev/urandom >"$WORK/root/files/blob.bin"
cat >"$WORK/nginx/nginx.conf" <<CONF
worker_processes 2;
daemon off;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/logs/error.log;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    server {
        listen 127.0.0.1:$NGINX_PORT;
        root $WORK/root/files;
    }
}
CONF

"$BIN" serve --port "$JOBKIT_PORT" --root "$WORK/root" >"$WORK/jobkit.log" 2>&1 &
JOBKIT_PID=$!
/usr/sbin/nginx -p "$WORK/nginx/" -c "$WORK/nginx/nginx.conf" &
NGINX_PID=$!
trap 'kill -TERM $JOBKIT_PID $NGINX_PID 2>/dev/null; wait; rm -rf "$WORK"' EXIT
JOBKIT_URL="http://127.0.0.1:$JOBKIT_PORT/files/blob.bin"
NGINX_URL="http://127.0.0.1:$NGINX_PORT/blob.bin"
for url in "$JOBKIT_URL" "$NGINX_URL"; do
    for _ in $(seq 100); do curl -sf -o /dev/null "$url" && break; sleep 0.1; done
    curl -sf -o "$WORK/check.bin" "$url" && cmp "$WORK/check.bin" "$WORK/root/files/blob.bin"
done

run() { # name url
    local out
    out=$(wrk -t2 -c"$CONNECTIONS" -d"${SECONDS_PER_RUN}s" "$2")
    local rps errors non2xx
    rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
    errors=$(awk '/Socket errors/ {print $0}' <<<"$out")
    non2xx=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
    printf '%-7s %10s req/s  non-2xx: %s  %s\n' "$1" "$rps" "${non2xx:-0}" "${errors:-socket errors: none}"
}

echo "wrk -t2 -c$CONNECTIONS -d${SECONDS_PER_RUN}s, 1 MiB file, $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ)"
for round in $(seq "$ROUNDS"); do
    run jobkit "$JOBKIT_URL"
    run nginx "$NGINX_URL"
done
