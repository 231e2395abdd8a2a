# Solitaire Arena: `make run` serves, `make test` tests. Both set everything up on a fresh machine.
# The first Python 3.11 that can make a venv, the distribution's own first: Debian builds it
# with profile-guided and link-time optimisation and libpython linked in; pyenv's default build
# has none of that. On this machine a rules-engine step took 14-17 % less time on it, and a
# WebSocket move 12-23 % less server CPU (docs/performance.md, "Session 59"). PYTHON=... overrides.
PYTHON ?= $(shell for p in /usr/bin/python3.11 python3.11 python3; do \
	command -v $$p >/dev/null 2>&1 && $$p -c "import ensurepip, venv" 2>/dev/null \
	&& { command -v $$p; break; }; done)
VENV   := .venv
PY     := $(VENV)/bin/python
HOST   ?= 127.0.0.1
PORT   ?= 8000
STAMP  := $(VENV)/.installed
# Two test processes (pytest-xdist), one per core here: each has its own test database and its
# own keys in Redis (server.settings.REDIS_KEY_PREFIX). PYTEST_ARGS= runs them in one.
# worksteal: a process that runs out of tests takes some of the other's, so the long browser
# tests do not end the run on one core (the suite 9-13 % faster on a 2-core Xeon).
PYTEST_ARGS ?= -n 2 --dist worksteal

.PHONY: run test lint format install bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

# server.stores: an unreachable DATABASE_URL or REDIS_URL stops the start with one line.
run: $(STAMP)
	@$(PY) -m server.stores
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput --verbosity 0
	$(PY) -m server.serve --host $(HOST) --port $(PORT)

# CONN_MAX_AGE=0: test threads must not keep connections that block dropping the test database.
test: $(STAMP)
	CONN_MAX_AGE=0 $(PY) -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: $(STAMP)
	$(PY) bench/engine.py
	$(PY) bench/solver.py

clean:
	rm -rf $(VENV) staticfiles .pytest_cache
