#!/usr/bin/env bash
# A throwaway PostgreSQL server for the ledger tests.
#
#   .ci/postgres.sh start DIR   initdb a cluster in DIR (created, must not
#                               exist or be empty), start it on 127.0.0.1 on a
#                               free port, create a role and a database, and
#                               print the connection URL (the only thing on
#                               stdout; messages go to stderr)
#   .ci/postgres.sh stop DIR    stop that server and delete DIR
#   .ci/postgres.sh pause DIR   stop that server, keeping DIR (the fault
#                               tests' "server down")
#   .ci/postgres.sh resume DIR  start it again, on the same port
#
# Used by .ci/run (which exports the URL as SKDP_TEST_POSTGRES_URL) and by
# the tests' session fixture when that variable is unset. Without pg_ctl and
# initdb on PATH or under /usr/lib/postgresql/*/bin, "start" installs
# Debian's postgresql package (as root, with apt-get) unless
# SKDP_POSTGRES_NO_INSTALL=1; it exits non-zero, loudly, if there is still no
# server. PostgreSQL refuses to run as root: as root the cluster belongs to
# the "postgres" user (created if missing).
set -euo pipefail

say() { echo "postgres.sh: $*" >&2; }

find_bindir() {
    local dir
    if command -v pg_ctl >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1; then
        # Symlinks (e.g. /usr/local/bin/pg_ctl) lead to the real directory,
        # where createdb and postgres of the same version live too.
        dir=$(dirname "$(readlink -f "$(command -v pg_ctl)")")
        if [[ -x "$dir/initdb" && -x "$dir/createdb" ]]; then
            echo "$dir"
            return 0
        fi
    fi
    # Debian keeps the server binaries off PATH, one directory per version.
    for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [[ -x "$dir/pg_ctl" && -x "$dir/initdb" && -x "$dir/createdb" ]]; then
            echo "$dir"
            return 0
        fi
    done
    return 1
}

install_server() {
    if [[ "${SKDP_POSTGRES_NO_INSTALL:-0}" == 1 ]]; then
        say "no PostgreSQL server binaries (pg_ctl, initdb) and SKDP_POSTGRES_NO_INSTALL=1"
        return 1
    fi
    if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
        say "no PostgreSQL server binaries (pg_ctl, initdb) and no way to install"
        say "them here (needs root and apt-get); install PostgreSQL >= 12"
        return 1
    fi
    say "no PostgreSQL server binaries found: installing Debian's postgresql package"
    if ! { DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; } >&2; then
        say "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
        say "!! apt-get install postgresql FAILED: the PostgreSQL ledger tests will SKIP"
        say "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
        return 1
    fi
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
    local dir=$1 bindir owner port password
    if ! bindir=$(find_bindir); then
        install_server || exit 1
        bindir=$(find_bindir) || {
            say "!! postgresql was installed but pg_ctl/initdb are still not found"
            exit 1
        }
    fi
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    as_owner=()
    if [[ $(id -u) -eq 0 ]]; then
        owner=postgres
        if ! id -u "$owner" >/dev/null 2>&1; then
            useradd --system --no-create-home --shell /usr/sbin/nologin "$owner" >&2
        fi
        chown "$owner" "$dir"
        # The owner must be able to reach DIR through its parents.
        chmod 755 "$dir"
        as_owner=(runuser -u "$owner" --)
    fi
    password=$(python3 -c 'import secrets; print(secrets.token_hex(12))')
    printf '%s\n' "$password" > "$dir/pwfile"
    [[ ${#as_owner[@]} -eq 0 ]] || chown "$owner" "$dir/pwfile"
    chmod 600 "$dir/pwfile"
    "${as_owner[@]}" "$bindir/initdb" -D "$dir/data" -U skdp --pwfile="$dir/pwfile" \
        --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --no-locale \
        >"$dir/initdb.log" 2>&1 || {
        cat "$dir/initdb.log" >&2
        say "!! initdb failed"
        exit 1
    }
    rm -f "$dir/pwfile"
    local attempt
    for attempt in 1 2 3; do
        port=$(free_port)
        # fsync stays on: the ledger's durability is part of what is tested.
        if "${as_owner[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
            -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=200" \
            start >&2; then
            echo "$bindir" > "$dir/bindir"
            echo "$port" > "$dir/port"
            "${as_owner[@]}" "$bindir/createdb" -h "$dir" -p "$port" -U skdp skdp_test >&2
            say "PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (data in $dir/data)"
            echo "postgresql://skdp:$password@127.0.0.1:$port/skdp_test"
            return 0
        fi
        say "server did not start on port $port (attempt $attempt)"
        tail -n 20 "$dir/server.log" >&2 || true
    done
    say "!! could not start PostgreSQL"
    exit 1
}

stop() {
    local dir=$1 bindir as_owner=()
    [[ -d "$dir" ]] || return 0
    if [[ -f "$dir/bindir" && -d "$dir/data" ]]; then
        bindir=$(cat "$dir/bindir")
        if [[ $(id -u) -eq 0 ]]; then
            as_owner=(runuser -u postgres --)
        fi
        "${as_owner[@]}" "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >&2 || true
    fi
    rm -rf "$dir"
}

owner_prefix() {
    if [[ $(id -u) -eq 0 ]]; then
        echo "runuser -u postgres --"
    fi
}

pause() {
    local dir=$1
    # shellcheck disable=SC2046
    $(owner_prefix) "$(cat "$dir/bindir")/pg_ctl" -D "$dir/data" -m fast -w stop >&2
}

resume() {
    local dir=$1 port
    port=$(cat "$dir/port")
    # shellcheck disable=SC2046
    $(owner_prefix) "$(cat "$dir/bindir")/pg_ctl" -D "$dir/data" -l "$dir/server.log" \
        -w -t 60 -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=200" \
        start >&2
}

case "${1:-}" in
start) start "${2:?usage: $0 start DIR}" ;;
stop) stop "${2:?usage: $0 stop DIR}" ;;
pause) pause "${2:?usage: $0 pause DIR}" ;;
resume) resume "${2:?usage: $0 resume DIR}" ;;
*)
    echo "usage: $0 start DIR | stop DIR | pause DIR | resume DIR" >&2
    exit 2
    ;;
esac
