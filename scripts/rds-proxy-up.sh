#!/usr/bin/env bash
# The TLS endpoints in front of the local PostgreSQL of scripts/postgres-up.sh (whose
# build has no TLS), both `docflow local rds-proxy` (cli/src/rds_proxy.rs) with the server
# certificate in .local/tls/:
# - the RDS Proxy stand-in on 127.0.0.1:${RDS_PROXY_PORT} (default PGSERVER_PORT + 1):
#   startup `options` refused as RDS Proxy refuses them, pinning conditions counted in
#   .local/rds-proxy-<port>.json. The functions reach the database only through it.
# - the DB instance's endpoint on 127.0.0.1:${DB_INSTANCE_PORT} (default PGSERVER_PORT
#   + 2): TLS only; the schema owner migrates through it, as it reaches an RDS instance.
# DOCFLOW_BIN: the docflow binary to run (default target/debug/docflow).
set -euo pipefail
cd "$(dirname "$0")/.."
pgport="${PGSERVER_PORT:-5433}"
port="${RDS_PROXY_PORT:-$((pgport + 1))}"
instance_port="${DB_INSTANCE_PORT:-$((pgport + 2))}"
bin="${DOCFLOW_BIN:-${CARGO_TARGET_DIR:-target}/debug/docflow}"

answers() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start() { # start <port> <name> [--instance]
  local port="$1" name="$2"
  shift 2
  if answers "${port}"; then
    echo "rds-proxy: using the ${name} on 127.0.0.1:${port}"
    return 0
  fi
  [ -x "${bin}" ] || { echo "rds-proxy: ${bin} is not built (cargo build -p docflow-cli)" >&2; exit 1; }
  [ -f .local/tls/server.crt ] || { echo "rds-proxy: no .local/tls/server.crt (scripts/postgres-up.sh makes it)" >&2; exit 1; }
  mkdir -p .local
  # Its own copy of the binary: a rebuild (or a deleted clone) leaves the running one be.
  cp "${bin}" ".local/rds-proxy-${port}.bin"
  nohup ".local/rds-proxy-${port}.bin" local rds-proxy --listen "127.0.0.1:${port}" \
    --upstream "127.0.0.1:${pgport}" --cert .local/tls/server.crt --key .local/tls/server.key \
    --stats ".local/rds-proxy-${port}.json" "$@" >".local/rds-proxy-${port}.log" 2>&1 &
  echo $! >".local/rds-proxy-${port}.pid"
  for _ in $(seq 1 100); do
    if answers "${port}"; then
      echo "rds-proxy: started the ${name} on 127.0.0.1:${port} (pid $(cat ".local/rds-proxy-${port}.pid"))"
      return 0
    fi
    sleep 0.1
  done
  echo "rds-proxy: the ${name} did not start; see .local/rds-proxy-${port}.log" >&2
  exit 1
}

start "${port}" "RDS Proxy stand-in"
start "${instance_port}" "DB instance endpoint" --instance
