#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests and benchmarks, from Debian's postgresql package
# (scripts/setup.sh --postgres installs it): initdb in a folder, the server on a free loopback port
# (and a Unix socket in the same folder), no container, nothing system-wide touched.
#
#   url=$(scripts/postgres.sh start /tmp/pg)          # prints the URL of its `postgres` database
#   scripts/postgres.sh start /tmp/pg --durable       # fsync on (benchmarks); the tests turn it off
#   scripts/postgres.sh pause /tmp/pg                 # stops the server, keeps its data (an outage)
#   scripts/postgres.sh resume /tmp/pg                # starts it again on the same port
#   scripts/postgres.sh stop /tmp/pg                  # stops it and removes the folder
#
# PUSHGATE_PG_OPTIONS adds server options at start (e.g. "-c shared_preload_libraries=pg_stat_statements").
#
# PostgreSQL refuses to run as root: as root, the cluster belongs to the `postgres` user the
# package created.
set -euo pipefail
command=${1:?usage: postgres.sh start|pause|resume|stop DIR [--durable]}
dir=${2:?usage: postgres.sh start|pause|resume|stop DIR [--durable]}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$bin" ] || { echo "postgres.sh: PostgreSQL is not installed (scripts/setup.sh --postgres)" >&2; exit 1; }
as=()
if [ "$(id -u)" -eq 0 ]; then as=(runuser -u postgres --); fi

case "$command" in
start)
  mkdir -p "$dir"
  [ "${#as[@]}" -eq 0 ] || chown postgres "$dir"
  "${as[@]}" "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --locale=C -E UTF8 >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; exit 1; }
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  durability="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
  [ "${3:-}" = "--durable" ] && durability=""
  echo "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=300 -c shared_buffers=256MB $durability ${PUSHGATE_PG_OPTIONS:-}" >"$dir/options"
  "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 -o "$(cat "$dir/options")" start >/dev/null \
    || { cat "$dir/server.log" >&2; exit 1; }
  echo "postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
  ;;
pause)
  "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
  ;;
resume)
  "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 -o "$(cat "$dir/options")" start >/dev/null \
    || { cat "$dir/server.log" >&2; exit 1; }
  ;;
stop)
  if [ -d "$dir/data" ]; then "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true; fi
  rm -rf "$dir"
  ;;
*)
  echo "usage: postgres.sh start|pause|resume|stop DIR [--durable]" >&2
  exit 1
  ;;
esac
