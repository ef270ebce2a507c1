# Firn: the two commands of the README, each bootstrapping .venv from pyproject.toml.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

export PYSPARK_PYTHON := $(abspath $(PY))

# `make airflow`: Airflow on this machine (SQLite, one process per component) with this repo's
# dags/ and plugins/, its state under .airflow/, and firn_default on the demo warehouse.
AIRFLOW_DIR := $(CURDIR)/.airflow
WAREHOUSE := $(CURDIR)/warehouse
FIRN_DEFAULT_CONN := {"conn_type": "firn", "host": "sqlite:///$(WAREHOUSE)/catalog.db", "extra": {"warehouse": "$(WAREHOUSE)"}}
SPARK_DEFAULT_CONN := {"conn_type": "spark", "host": "local[2]", "extra": {"deploy-mode": "client"}}

.PHONY: demo test lint typecheck bench clean airflow cluster-test

$(STAMP): pyproject.toml
	@# Spark needs Java 17+: install Debian's JRE when it is missing and we may (root, apt).
	@command -v java >/dev/null 2>&1 || { command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] \
		&& apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless >/dev/null; } \
		|| { echo "Java 17 is needed for Spark: install a JDK/JRE 17 and put java on PATH" >&2; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,spark,airflow,postgres,rest]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/demo.py

airflow: $(STAMP)
	mkdir -p $(AIRFLOW_DIR) $(WAREHOUSE)
	AIRFLOW_HOME=$(AIRFLOW_DIR) \
	AIRFLOW__CORE__DAGS_FOLDER=$(CURDIR)/dags \
	AIRFLOW__CORE__PLUGINS_FOLDER=$(CURDIR)/plugins \
	AIRFLOW__CORE__LOAD_EXAMPLES=False \
	AIRFLOW__CORE__TEST_CONNECTION=Enabled \
	AIRFLOW_CONN_FIRN_DEFAULT='$(FIRN_DEFAULT_CONN)' \
	AIRFLOW_CONN_SPARK_DEFAULT='$(SPARK_DEFAULT_CONN)' \
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" \
	$(VENV)/bin/airflow standalone

lint: $(STAMP)
	$(VENV)/bin/ruff check provider tests bench plugins dags examples
	$(VENV)/bin/ruff format --check provider tests bench plugins dags examples
	$(VENV)/bin/lint-imports

typecheck: $(STAMP)
	$(VENV)/bin/mypy

test: $(STAMP) lint typecheck
	$(PY) -m pytest -n 2 -q tests

# docker-compose.yaml's stack without Docker: its services as local processes (PostgreSQL on
# 127.0.0.1:5432, moto in place of MinIO, a Spark standalone master and worker, Airflow with the
# LocalExecutor), then the example DAGs through `airflow dags test` (tests/cluster/).
cluster-test: $(STAMP)
	$(PY) -m pytest -q -n 0 tests/cluster

clean:
	rm -rf $(VENV) warehouse .airflow test-artifacts .pytest_cache .mypy_cache .ruff_cache
