# Sourced by the scripts beside it: one way to run Debian's nginx (/usr/sbin/nginx) on loopback.
#
#   . "$here/nginx.sh"
#   nginx_start WORK SERVERS READY_URL [CURL_OPTIONS]
#
# Writes WORK/nginx.conf with the `server { ... }` blocks in SERVERS (nginx syntax; `root` and the
# listen addresses are the caller's), starts nginx in the background (its pid in $nginx_pid; the
# caller's trap kills it), and waits until READY_URL answers (curl, with CURL_OPTIONS, e.g. a
# --cacert). One worker; every request's connection serial number is logged to WORK/logs/access.log,
# so `sort -u WORK/logs/access.log | wc -l` is the number of connections nginx saw since it was
# emptied.
nginx_start() {
    nginx_work=$1 nginx_servers=$2 nginx_ready=$3 nginx_curl_options=${4:-}
    nginx=/usr/sbin/nginx
    [ -x "$nginx" ] || { echo "nginx not found at $nginx: install Debian's nginx package" >&2; exit 1; }
    mkdir -p "$nginx_work/logs"
    cat > "$nginx_work/nginx.conf" <<CONF
$( [ "$(id -u)" = 0 ] && echo "user root;" )
worker_processes 1;
daemon off;
pid $nginx_work/nginx.pid;
error_log $nginx_work/logs/error.log;
events { worker_connections 1024; }
http {
    log_format connections '\$connection';
    access_log $nginx_work/logs/access.log connections;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 100000;
    client_body_temp_path $nginx_work; proxy_temp_path $nginx_work; fastcgi_temp_path $nginx_work;
    uwsgi_temp_path $nginx_work; scgi_temp_path $nginx_work;
$nginx_servers
}
CONF
    "$nginx" -c "$nginx_work/nginx.conf" -p "$nginx_work" -e "$nginx_work/logs/error.log" &
    nginx_pid=$!
    for _ in $(seq 1 50); do
        # shellcheck disable=SC2086 # the options are words
        curl -sf $nginx_curl_options "$nginx_ready" -o /dev/null && return 0
        sleep 0.1
    done
    echo "nginx did not answer $nginx_ready:" >&2
    cat "$nginx_work/logs/error.log" >&2
    exit 1
}
