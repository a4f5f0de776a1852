#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests, from Debian's packages.
#
#   scripts/pg-cluster.sh install        apt-get install postgresql (if missing)
#   scripts/pg-cluster.sh start DIR      initdb + start on 127.0.0.1; prints the URL
#   scripts/pg-cluster.sh stop DIR       stop it and delete DIR
#
# The server runs as the unprivileged 'postgres' user the package creates,
# listens on loopback only, keeps everything (data, socket, log) in DIR,
# and trusts local connections: it exists for one test run.
set -euo pipefail

pg_bin() {
    local dir
    dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    [ -n "$dir" ] || { echo "PostgreSQL is not installed (run: $0 install)" >&2; exit 1; }
    echo "$dir"
}

as_postgres() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

case "${1:-}" in
install)
    if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
        export DEBIAN_FRONTEND=noninteractive
        # A registry hiccup should not fail a whole CI run: three tries.
        for attempt in 1 2 3; do
            if apt-get update -qq && apt-get install -y -qq postgresql >/dev/null; then
                break
            fi
            [ "$attempt" = 3 ] && { echo "could not install postgresql" >&2; exit 1; }
            sleep $((attempt * 10))
        done
    fi
    ;;
start)
    dir=${2:?usage: $0 start DIR}
    bin=$(pg_bin)
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$dir"
    chmod 700 "$dir"
    port=$(free_port)
    as_postgres "$bin/initdb" -D "$dir/data" -U memos -A trust -E UTF8 --no-locale >"$dir/initdb.log"
    as_postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-h 127.0.0.1 -p $port -k $dir -c fsync=off -c max_connections=200" start >/dev/null
    as_postgres "$bin/createdb" -h 127.0.0.1 -p "$port" -U memos memos_feedback
    echo "postgresql+psycopg://memos@127.0.0.1:$port/memos_feedback"
    ;;
stop)
    dir=${2:?usage: $0 stop DIR}
    if [ -d "$dir/data" ]; then
        as_postgres "$(pg_bin)/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
    fi
    rm -rf "$dir"
    ;;
*)
    echo "usage: $0 install | start DIR | stop DIR" >&2
    exit 2
    ;;
esac
