# Qualifier: `make run` starts everything, `make test` runs every test.
SHELL := /bin/bash
CARGO ?= cargo

.PHONY: clients run run-stack dev-endpoint console-link test build build-all bench-smoke perf-check perf-check-short lint fmt services migrate clean-test-dbs bench bench-quick bench-disk latency receiver-kit conformance deploy-check chaos chaos-short fuzz fuzz-short topology topology-short upgrade-check upgrade-check-history soak soak-short

run:                ## services, migrations, both binaries, a printed dev org and token
	@echo "make run: building first. The first build compiles every dependency (about 10 minutes on 2 cores); later ones take seconds."
	$(CARGO) build --workspace --bins
	@$(MAKE) -s run-stack

# In a terminal the stack runs as a job of its own (bash -m), which the terminal's Ctrl-C
# reaches and make does not: the stack stops cleanly and make exits with its 0. Without job
# control make would take the Ctrl-C too and end as an interrupted make (130).
run-stack:          ## make run without its build: the binaries as last built
	@if [ -t 0 ]; then bash -mc 'scripts/run-dev.sh; exit $$?'; else scripts/run-dev.sh; fi

dev-endpoint:       ## one more endpoint of make run's dev org on its dev receiver, with its own secret: make dev-endpoint NAME=crm
	@scripts/dev-endpoint.sh $(NAME)

console-link:       ## a new one-time sign-in link to the dev org's console (beside a running make run)
	@scripts/console-link.sh

test: services      ## unit and integration tests against the local PostgreSQL and RabbitMQ
	scripts/ensure-test-deps.sh
	# One test a core unless TEST_THREADS says otherwise: two a core is faster, but its load
	# still decides some tests (docs/operations.md, "Continuous integration").
	RUST_TEST_THREADS=$(or $(TEST_THREADS),$(shell nproc)) $(CARGO) test --workspace --all-targets
	# Tests that count requests per second or race a clock, each alone on the machine (they
	# are `#[ignore]`d in the parallel run above).
	$(CARGO) test --workspace --all-targets -- --ignored --test-threads=1
	$(CARGO) test --workspace --doc
	$(MAKE) receiver-kit
	# `make run` as a newcomer meets it: the printed lines work from any directory, a second
	# endpoint gets its own signed copy, each chart counts its list, a used console link
	# names make console-link, and Ctrl-C stops it quietly with 0 (beside the default
	# services, removed after).
	python3 scripts/check-run-dev.py

conformance:        ## schemathesis against docs/openapi.yaml on a live lead-api (no 5xx, as documented)
	scripts/api-conformance.sh 100

deploy-check:       ## docker-compose.yml and deploy/kubernetes/ are well-formed and agree
	scripts/deploy-check.sh

BIN := $(or $(CARGO_TARGET_DIR),target)/debug
# The dev-profile build every tool below runs from: the same command as `build-all`, so after
# it (as in CI) it compiles nothing. Building only the packages a tool needs (`-p …`) unifies
# another set of features and compiled the project's own crates a second time, about a minute
# per stage in a fresh clone.
DEV_BUILD := $(CARGO) build --workspace --all-targets

# Four events per lead through a throttle with per-lead order: also fails if a lead's events are
# accepted out of order (docs/delivery.md, "Throttle and order"). Both send to three endpoints,
# the last failing for the first third of the run, the second answering 429 with Retry-After
# now and then: every delivery to each must arrive, none before the pause it was asked for.
CHAOS_PACE := --events-per-lead 4 --max-per-second 200 --ordering per_lead --endpoints 3

chaos:              ## 5,000 events to 3 endpoints under kill -9, broker and database restarts, receiver faults, throttled and ordered per lead
	$(DEV_BUILD)
	$(BIN)/qualifier-chaos --events 5000 --faults 16 $(CHAOS_PACE)

chaos-short:        ## the same with 800 events and one fault of each kind (CI)
	$(DEV_BUILD)
	$(BIN)/qualifier-chaos --events 800 --faults 7 $(CHAOS_PACE)

soak:               ## the whole system at half its measured rate for SOAK_MINUTES (30), sampled each minute: fails on growth that does not level off
	$(CARGO) build --release -p lead-api -p webhook-delivery -p qualifier-chaos
	$(REL)/qualifier-soak --minutes $(or $(SOAK_MINUTES),30)

soak-short:         ## the same for 2 minutes, sampled every 10 s, on the dev build CI already made (CI)
	$(DEV_BUILD)
	# 100 events a second: the dev build on two cores delivers about 150 at most, and at that
	# edge a 10 s sample's p99 swung between 45 and 220 ms with nothing growing, which the
	# drift check cannot tell from growth. Below the edge it can.
	$(BIN)/qualifier-soak --minutes 2 --sample-seconds 10 --warmup-minutes 0.5 --rate 100

upgrade-check:      ## the previous version (CHANGELOG.md) upgraded to this one under traffic: 0 lost, 0 failed requests
	scripts/upgrade-check.sh

upgrade-check-history: ## the same on a database holding 3,000,000 events: also no request slower than 2 s while the migrations run
	scripts/upgrade-check.sh --history-events $(or $(HISTORY_EVENTS),3000000)

topology:           ## TLS to both servers, a 3-node RabbitMQ cluster losing nodes, a PostgreSQL failover (2,000 events each)
	$(DEV_BUILD)
	$(BIN)/qualifier-topology --events 2000 --seconds 60

topology-short:     ## the same with 600 events over 30 s (CI)
	$(DEV_BUILD)
	$(BIN)/qualifier-topology --events 600 --seconds 30

fuzz:               ## each cargo-fuzz target for FUZZ_SECONDS (default 60)
	scripts/fuzz.sh $(or $(FUZZ_SECONDS),60)

fuzz-short:         ## each target for 20 s, built without optimisation (CI)
	FUZZ_PROFILE=dev scripts/fuzz.sh 20

receiver-kit:       ## the receiver guide's Python and Node snippets against the signature vectors
	scripts/ensure-test-deps.sh
	python3 scripts/check-receiver-snippets.py
	python3 scripts/event-schemas.py --check

build:
	$(CARGO) build --workspace --bins

build-all:          ## every crate, test, tool and example in the dev profile: the one compile CI makes
	$(CARGO) build --workspace --all-targets

lint:               ## what CI checks besides the tests: formatting, clippy, the migration linter, the one home of a delivery's state, the files documents name, the clients following the OpenAPI description
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	scripts/lint-migrations.sh
	scripts/lint-delivery-state.sh
	python3 scripts/check-doc-paths.py
	scripts/generate-clients.sh --check

clients:            ## regenerate the typed clients (clients/python, clients/typescript) from docs/openapi.yaml
	scripts/generate-clients.sh

fmt:
	$(CARGO) fmt --all

services:           ## start (or install) PostgreSQL and RabbitMQ
	scripts/ensure-services.sh

clean-test-dbs:     ## drop databases left by interrupted test runs
	psql postgres://postgres:postgres@127.0.0.1:5432/postgres -Atc \
	  "SELECT 'DROP DATABASE ' || datname || ' WITH (FORCE);' FROM pg_database WHERE datname LIKE 'qualifier_test_%' OR datname LIKE 'qualifier_tpl%'" \
	  | psql postgres://postgres:postgres@127.0.0.1:5432/postgres -q

REL := $(or $(CARGO_TARGET_DIR),target)/release

bench:              ## the benchmark harness (docs/performance.md): table + target/bench/latest.json
	$(CARGO) build --release -p lead-api -p webhook-delivery -p qualifier-bench
	scripts/bench.sh $(BENCH_ARGS)

bench-quick:        ## the same, short (4,000 events per run; about two minutes once built)
	$(CARGO) build --release -p lead-api -p webhook-delivery -p qualifier-bench
	scripts/bench.sh --quick $(BENCH_ARGS)

bench-smoke:        ## the same on the dev build, smallest: every phase and check once, figures meaningless (CI)
	$(DEV_BUILD)
	BENCH_PROFILE=dev scripts/bench.sh --smoke $(BENCH_ARGS)

perf-check:         ## this checkout against the previous release (CHANGELOG.md), release builds taking turns, 3 pairs of 5,000 events: fails if the median CPU per event is above 1.2x
	$(CARGO) build --release -p lead-api -p webhook-delivery -p qualifier-bench
	scripts/bench.sh --against "$$(scripts/previous-release.sh release)" --pairs $(or $(PERF_PAIRS),3) --events $(or $(PERF_EVENTS),5000)

# CI's release build lives outside the clone, so that each run compiles only the project's own
# crates (docs/operations.md, "Continuous integration"); PERF_TARGET_DIR puts it elsewhere.
perf-check-short:   ## the same with 5 pairs of 2,000 events (CI): shorter runs are noisier, so more pairs decide
	$(MAKE) perf-check PERF_PAIRS=5 PERF_EVENTS=2000 CARGO_TARGET_DIR=$(or $(PERF_TARGET_DIR),$(HOME)/.cache/qualifier/release-target)

bench-disk:         ## the history phase with PostgreSQL on an ext4 without online discard (root; a loop device)
	$(CARGO) build --release -p lead-api -p webhook-delivery -p qualifier-bench
	scripts/bench-disk.sh --only history $(BENCH_ARGS)

latency:            ## commit-to-receipt latency of signed webhooks on an idle system
	$(CARGO) run --release -p webhook-delivery --example e2e_latency
