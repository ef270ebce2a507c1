# Firn: the two commands of the README, each bootstrapping .venv from pyproject.toml.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

export PYSPARK_PYTHON := $(abspath $(PY))

.PHONY: demo test lint typecheck bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,spark,airflow,postgres,rest]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m firn.demo

lint: $(STAMP)
	$(VENV)/bin/ruff check provider tests bench
	$(VENV)/bin/ruff format --check provider tests bench
	$(VENV)/bin/lint-imports

typecheck: $(STAMP)
	$(VENV)/bin/mypy

test: $(STAMP) lint typecheck
	$(PY) -m pytest -n 2 -q tests

clean:
	rm -rf $(VENV) warehouse .pytest_cache .mypy_cache .ruff_cache
