"""The Airflow provider for Firn table maintenance."""
