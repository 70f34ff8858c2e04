#!/usr/bin/env bash
# wrk POST /posts against a `jobkit serve` binary: consecutive runs on one root, so that the number of stored
# posts grows between runs (a store that rewrites everything slows down; an append-only log does not).
# Not part of CI.
#
#   Benchmarks/server-posts-wrk.sh [jobkit binary] [runs] [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-$(swift build -c release --product jobkit --scratch-path .build-release --show-bin-path)/jobkit}
RUNS=${2:-3}
SECONDS_PER_RUN=${3:-10}
PORT=18482

WORK=$(mktemp -d /tmp/jobkit-posts.XXXXXX)
cat >"$WORK/post.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"text": "a post of ordinary length, about one line of text", "mediaIDs": []}'
wrk.headers["Content-Type"] = "application/json"
LUA
"$BIN" serve --port "$PORT" --root "$WORK/root" >"$WORK/serve.log" 2>&1 &
PID=$!
trap 'kill -TERM $PID 2>/dev/null; wait; rm -rf "$WORK"' EXIT
for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$PORT/posts" && break; sleep 0.1; done

echo "wrk -t2 -c8 -d${SECONDS_PER_RUN}s POST /posts, $BIN, $(date -u +%Y-%m-%dT%H:%MZ)"
for run in $(seq "$RUNS"); do
    before=$(curl -s "http://127.0.0.1:$PORT/posts" | { grep -o '"id"' || true; } | wc -l)
    out=$(wrk -t2 -c8 -d"${SECONDS_PER_RUN}s" -s "$WORK/post.lua" "http://127.0.0.1:$PORT/posts")
    printf 'run %d (from %6d posts): %10s req/s  non-2xx: %s\n' "$run" "$before" \
        "$(awk '/Requests\/sec/ {print $2}' <<<"$out")" "$(awk '/Non-2xx/ {print $NF}' <<<"$out")"
done
