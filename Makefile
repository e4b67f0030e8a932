# `make test` and `make demo` work on a fresh machine: they create .venv, install the project
# with its pinned test dependencies and the optional extras the tests exercise (triton, models,
# peers), then run.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test demo data lint format bench clean venv

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,triton,models,peers]'
	touch $(STAMP)

test: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks
	$(PY) -m pytest -n 2 --durations=15

demo: $(STAMP)
	$(PY) demo.py

# The large benchmark inputs that do not ship (16 GS-Schedule graphs, 17 MB), downloaded from
# their public upstream and checked against data/*/SHA256SUMS. No test needs them. The script
# needs only the standard library, so any Python 3.10+ runs it, without the .venv.
data:
	$(PYTHON) benchmarks/fetch_data.py

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks

format: $(STAMP)
	$(VENV)/bin/ruff format src tests benchmarks

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache
