VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint types imports unit bench clean chromium postgresql

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/orders.py

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests examples benchmarks scripts
	$(VENV)/bin/ruff format --check src tests examples benchmarks scripts

types: $(STAMP)
	$(VENV)/bin/mypy

# The layer contracts of [tool.importlinter] in pyproject.toml (docs/architecture.md).
imports: $(STAMP)
	$(VENV)/bin/lint-imports

# The dashboard's browser tests (tests/dashboard) drive Debian's chromium, headless,
# through Playwright (the dev extra): installed with apt when it is missing (as root, else
# through sudo). Playwright's own browser download is not used.
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

chromium:
	@command -v chromium >/dev/null 2>&1 || { \
		echo "installing Debian's chromium for the dashboard's browser tests"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; }

# The PostgreSQL backend's tests start their own server (tests/postgres_server.py: initdb
# into a temporary directory, pg_ctl on a free port) with Debian's PostgreSQL binaries,
# installed with apt when no initdb is found (the test session never uses a running one),
# and Debian's pgbouncer (tests/pgbouncer.py puts one in front of it, transaction mode).
postgresql:
	@{ command -v pg_config >/dev/null 2>&1 && test -x "$$(pg_config --bindir)/initdb"; } || \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
		echo "installing Debian's postgresql for the PostgreSQL backend's tests"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq postgresql >/dev/null; }
	@command -v pgbouncer >/dev/null 2>&1 || test -x /usr/sbin/pgbouncer || { \
		echo "installing Debian's pgbouncer for the PostgreSQL backend's PgBouncer tests"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq pgbouncer >/dev/null; }

# Three test processes on 2 cores: each starts its own redis-server and PostgreSQL, and
# tests wait on real processes, servers and leases far more than they compute (measured:
# 0.6 of a core used by two), so a third cuts the suite from about 630 s to 400 s here.
# A single test: .venv/bin/pytest PATH.
test: lint types imports chromium postgresql
	$(VENV)/bin/pytest -q -n 3

# The benchmark suite (docs/benchmarks.md): `make bench`, `make bench-quick` (under 2 min),
# options through ARGS, e.g. `make bench ARGS="--only B1,B3 --backends redis --repeat 5"`.
BENCH_STAMP := $(VENV)/.installed-bench

$(BENCH_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	touch $(BENCH_STAMP)

.PHONY: bench-quick bench-peers

# PEERS (benchmarks/peers.py): issue 15's table, workpool beside huey, dramatiq, taskiq and
# a raw Redis loop and SQLite table, interleaved in one run (26 min here, loaded; quick:
# 2-4 min); installs the pinned peers extra first. Writes benchmarks/results/peers/
# (results.json, peers.md: the ratio table) so the full suite's results stay. --retries 0:
# every subject shares each repetition's disturbance (interleaved), and retrying a whole
# repetition would double the run on a shared machine (ARGS="--retries 2" to retry anyway).
PEERS_STAMP := $(VENV)/.installed-peers

$(PEERS_STAMP): $(BENCH_STAMP) pyproject.toml
	$(PY) -m pip install --quiet -e '.[dev,bench,peers]'
	touch $(PEERS_STAMP)

bench: $(BENCH_STAMP)
	$(PY) -m benchmarks $(ARGS)

bench-quick: $(BENCH_STAMP)
	$(PY) -m benchmarks --quick $(ARGS)

bench-peers: $(PEERS_STAMP)
	$(PY) -m benchmarks --only PEERS --retries 0 --out benchmarks/results/peers $(ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
