"""Airflow tests: configure Airflow before any test module here imports it (see tests/fixtures/airflow.py)."""

from tests.fixtures.airflow import configure_airflow_environment

configure_airflow_environment()
