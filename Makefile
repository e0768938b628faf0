# docflow: `make test` (everything), `make up` / `make down` (the local stack).
SHELL := /bin/bash
.DEFAULT_GOAL := test

export AWS_ENDPOINT_URL ?= http://127.0.0.1:4566
export AWS_REGION ?= eu-central-1
export AWS_ACCESS_KEY_ID ?= test
export AWS_SECRET_ACCESS_KEY ?= test
export DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/docflow
export DOCFLOW_SECRET_ID ?= docflow/app
export MAX_RECEIVE_COUNT ?= 3

VENV := .venv

.PHONY: up down test lint venv

$(VENV)/.installed: requirements-dev.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed

## up: start Postgres (if needed) and moto, migrate, create queues/DLQs, bucket, secret
up: venv
	scripts/postgres-up.sh
	scripts/moto-up.sh
	cargo run --quiet -p docflow-cli -- local up

## down: stop what `make up` started
down:
	scripts/moto-down.sh
	scripts/postgres-down.sh

## test: bring the stack up, then run every test (unit, integration, infra checks)
test: up
	cargo test --workspace --all-targets
	infra/check.sh

## lint: what CI's reviewers hold the code to
lint:
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
