"""Test-wide fixtures live in tests/fixtures/; this file only registers them."""

pytest_plugins = [
    "tests.fixtures.catalogs",
    "tests.fixtures.airflow",
    "tests.fixtures.rest",
    "tests.fixtures.spark",
    "tests.fixtures.s3",
]
