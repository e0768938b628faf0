#!/usr/bin/env bash
# Uses the Postgres at 127.0.0.1:5432 when it answers; otherwise starts a private cluster
# from the installed PostgreSQL binaries in .local/pgdata (run as the postgres system
# user, trust auth, listening on 127.0.0.1:5432).
set -euo pipefail
cd "$(dirname "$0")/.."
if pg_isready -q -h 127.0.0.1 -p 5432; then
  echo "postgres: using the server on 127.0.0.1:5432"
  exit 0
fi
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -z "${bindir}" ]; then
  echo "postgres: nothing answers on 127.0.0.1:5432 and no PostgreSQL binaries are installed (apt-get install postgresql)" >&2
  exit 1
fi
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
mkdir -p .local
data="$(pwd)/.local/pgdata"
if [ ! -f "${data}/PG_VERSION" ]; then
  mkdir -p "${data}"
  [ "$(id -u)" = 0 ] && chown postgres:postgres "${data}"
  as_postgres "${bindir}/initdb" -D "${data}" -U postgres --auth=trust >/dev/null
fi
as_postgres "${bindir}/pg_ctl" -D "${data}" -l "${data}/server.log" -w \
  -o "-c listen_addresses=127.0.0.1 -c port=5432 -c unix_socket_directories=${data}" start
touch .local/pg.started
echo "postgres: started a private cluster in ${data}"
