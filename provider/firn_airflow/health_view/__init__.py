"""The table-health view: an Airflow 3 plugin (a FastAPI app under the API server plus a
navigation entry) showing each table's health, history, maintenance and recommendations.

Enable it by putting ``plugins/firn_table_health.py`` (one import of
:class:`~firn_airflow.health_view.plugin.FirnTableHealthPlugin`) into Airflow's plugins folder.
"""
