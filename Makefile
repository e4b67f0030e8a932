# `make test` and `make demo` work on a fresh machine: they create .venv, install the project
# with its pinned test dependencies and the optional extras the tests exercise (triton, models,
# peers), then run.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test demo lint format bench clean venv

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

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks

format: $(STAMP)
	$(VENV)/bin/ruff format src tests benchmarks

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache
