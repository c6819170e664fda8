# Two commands set everything up: `make run` and `make test` (see README.md).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000

.PHONY: run test lint test-sqlite test-postgres test-peer install install-dev clean

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed: requirements.txt | $(BIN)/activate
	$(BIN)/pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements.txt requirements-dev.txt | $(BIN)/activate
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $(VENV)/.installed $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

## make run: install, migrate, load demo data into an empty database, start web + Celery worker + beat.
## exec: make's child is run.sh itself, which stops everything when make goes away (scripts/run.sh).
run: install
	exec env PORT=$(PORT) bash scripts/run.sh

## make test: lint, the whole suite on SQLite and again on a PostgreSQL server started for the run (there only the
## tests that use a database: the pure engine's cannot reach one, tests/conftest.py), then the
## differential tests against the real PanDA, DIRAC and WMCore code (fetched from the package index into var/peer on first
## use; DIRAC's TaskQueueDB runs on a private MariaDB server the test starts, WMCore's list function under node).
## Tests run in TEST_WORKERS processes (pytest-xdist, a test file per process at a time, each with its own test
## database); those marked slow start workers, servers or a browser and time what they do, so they run after the
## others: on SQLite (the browser, make run's stack) two at a time, on PostgreSQL (real Celery workers) one at a
## time. The differential tests run in TEST_WORKERS processes too: each real code is unpacked under
## var/peer on first use by one of them while the others wait on a file lock (tools/peer/setup.py).
test: install-dev lint test-sqlite test-postgres test-peer

TEST_WORKERS ?= 2
PYTEST := $(BIN)/python -m pytest -q
PARALLEL := -n $(TEST_WORKERS) --dist loadfile

lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test-sqlite: install-dev
	bash scripts/ensure_chromium.sh
	bash scripts/ensure_prometheus.sh
	env -u DATABASE_URL $(PYTEST) -m "not peer and not slow" $(PARALLEL)
	env -u DATABASE_URL $(PYTEST) -m "slow and not peer" -n $(TEST_WORKERS) --dist load

test-postgres: install-dev
	bash scripts/ensure_redis.sh
	bash scripts/with_postgres.sh sh -c 'DATABASE_TESTS_ONLY=1 $(PYTEST) -m "not peer and not slow" $(PARALLEL) && $(PYTEST) -m "slow and not peer"'

test-peer: install-dev
	bash scripts/ensure_mariadb.sh
	env -u DATABASE_URL $(PYTEST) -m peer $(PARALLEL)

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache .hypothesis
