"""``firn.spark.register_view``: a Firn (Iceberg) view as a Spark temporary view.

The view's ``spark`` SQL representation becomes ``CREATE OR REPLACE TEMPORARY VIEW <name>
(<column> COMMENT '<doc>', ...) AS <sql>``: the columns are the view schema's field names (the
spec stores a view's column aliases and comments in its schema), so Spark's columns are named
and documented as the view says, and Spark checks that the SQL yields that many columns.

View spec "Versions": unqualified names in the SQL resolve in the version's
``default-catalog`` (absent: the current one) and ``default-namespace``. Spark records the
current catalog and namespace in a SQL temporary view when the view is created and resolves
its SQL there on every query, so the view is created with Spark's current catalog and
namespace set to the view's defaults and then set back. Those must therefore exist in Spark
(``CREATE NAMESPACE db``): refusing is safer than letting ``events`` resolve to a table of
that name in whatever namespace happens to be current. The tables the SQL reads are Spark's:
tables of Spark's catalogs, or temporary views (e.g. a Firn table read through the ``firn``
data source and registered with ``createOrReplaceTempView``), which an unqualified name finds
first.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from firn.catalog.base import to_identifier
from firn.errors import FirnError, NotFound, Unsupported, ValidationError
from firn.spark.config import catalog_config
from firn.views.view import View

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

SPARK_DIALECT = "spark"


def quote_identifier(part: str) -> str:
    """A Spark SQL identifier in backticks (a backtick inside is doubled)."""
    return "`" + part.replace("`", "``") + "`"


def quote_string(text: str) -> str:
    """A Spark SQL string literal: Spark's parser reads backslash escapes, so ``\\`` and ``'``
    are escaped (``spark.sql.parser.escapedStringLiterals`` is off by default)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def temp_view_statement(name: str, view: View, sql: str) -> str:
    """The ``CREATE OR REPLACE TEMPORARY VIEW`` statement for ``view`` under ``name``."""
    columns = []
    for f in view.schema().fields:
        column = quote_identifier(f.name)
        if f.doc:
            column += f" COMMENT {quote_string(f.doc)}"
        columns.append(column)
    column_list = f" ({', '.join(columns)})" if columns else ""
    return f"CREATE OR REPLACE TEMPORARY VIEW {quote_identifier(name)}{column_list} AS {sql}"


def register_view(
    spark: SparkSession,
    identifier: str | tuple[str, ...],
    *,
    temp_view: str | None = None,
    catalog: str | None = None,
    warehouse: str | None = None,
    **catalog_properties: str,
) -> DataFrame:
    """Define a Spark temporary view from the Firn view ``identifier`` (``"db.v"``).

    The catalog comes from ``catalog`` (URI), ``warehouse`` and ``catalog_properties`` over the
    session's ``spark.firn.catalog.*`` conf, as for :func:`firn.spark.delete`. The temporary
    view is named ``temp_view`` (default: the view's own name, ``v``) and replaces one of that
    name. Its SQL is the current version's ``spark`` representation, resolved in the view's
    default catalog and namespace (see the module docstring). Returns the temporary view as a
    DataFrame (``spark.table(temp_view)``).

    ``NotFound`` (listing the view's dialects) if the view has no ``spark`` SQL, or if Spark
    has no catalog or namespace of the view's defaults; ``ValidationError`` if Spark refuses
    the SQL (the message says why, e.g. it yields another number of columns than the schema).
    """
    ident = to_identifier(identifier)
    catalog_obj = catalog_config(spark, catalog, warehouse, **catalog_properties).load()
    load_view = getattr(catalog_obj, "load_view", None)
    if not callable(load_view):
        raise Unsupported(
            f"catalog {catalog_obj.name!r} has no views: cannot register view {'.'.join(ident)!r}"
        )
    view = load_view(ident)
    if not isinstance(view, View):  # pragma: no cover - every Firn catalog returns a View
        raise FirnError(f"catalog {catalog_obj.name!r} returned {type(view).__name__} for view {view!r}")
    try:
        sql = view.sql_for(SPARK_DIALECT)
    except NotFound as e:
        raise NotFound(f"cannot define a Spark view from {view.name!r}: {e}") from None
    temp_name = temp_view or ident[-1]
    statement = temp_view_statement(temp_name, view, sql)
    with _resolution_context(spark, view):
        _run(spark, statement, view, temp_name)
    return spark.table(quote_identifier(temp_name))


@contextlib.contextmanager
def _resolution_context(spark: SparkSession, view: View) -> Iterator[None]:
    """Spark's current catalog and namespace set to the view's defaults, then restored."""
    saved_catalog, saved_namespace = spark.catalog.currentCatalog(), spark.catalog.currentDatabase()
    try:
        if view.default_catalog is not None:
            _set_catalog(spark, view.default_catalog, view)
        if view.default_namespace:
            _set_namespace(spark, view.default_namespace, view)
        yield
    finally:
        spark.catalog.setCurrentCatalog(saved_catalog)
        # currentDatabase() quotes the namespace as needed, and setCurrentDatabase parses it.
        spark.catalog.setCurrentDatabase(saved_namespace)


def _set_catalog(spark: SparkSession, name: str, view: View) -> None:
    try:
        spark.catalog.setCurrentCatalog(name)
    except Exception as e:  # py4j / PySpark errors: CATALOG_NOT_FOUND
        raise NotFound(
            f"cannot define a Spark view from {view.name!r}: Spark has no catalog {name!r} (the view's "
            f"default catalog; configure spark.sql.catalog.{name}): {_spark_message(e)}"
        ) from None


def _set_namespace(spark: SparkSession, namespace: tuple[str, ...], view: View) -> None:
    quoted = ".".join(quote_identifier(part) for part in namespace)
    try:
        spark.catalog.setCurrentDatabase(quoted)
    except Exception as e:  # AnalysisException SCHEMA_NOT_FOUND
        raise NotFound(
            f"cannot define a Spark view from {view.name!r}: Spark catalog "
            f"{spark.catalog.currentCatalog()!r} has no namespace {'.'.join(namespace)!r} (the view's "
            f"default namespace, where its unqualified names resolve; CREATE NAMESPACE {quoted} "
            f"first): {_spark_message(e)}"
        ) from None


def _run(spark: SparkSession, statement: str, view: View, temp_name: str) -> None:
    from pyspark.errors import PySparkException

    try:
        spark.sql(statement)
    except PySparkException as e:
        raise ValidationError(
            f"Spark refused the spark SQL of view {view.name!r} (as temporary view {temp_name!r}): "
            f"{_spark_message(e)}"
        ) from e


def _spark_message(error: Any) -> str:
    """Spark's message on one line: no JVM stack frames, no echo of the SQL, at most 600 chars."""
    kept = []
    for line in str(error).splitlines():
        line = line.strip()
        if line.startswith(("== ", "JVM stacktrace")):
            break
        if not line or line.startswith(("at ", "An error occurred while calling")):
            continue
        kept.append(line.lstrip(": "))
    text = " ".join(kept) or type(error).__name__
    return text if len(text) <= 600 else text[:597] + "..."


__all__ = ["SPARK_DIALECT", "quote_identifier", "quote_string", "register_view", "temp_view_statement"]
