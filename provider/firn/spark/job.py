"""The spark-submit entry point for every maintenance operation.

::

    spark-submit [--py-files firn.zip] <firn.spark.job.path()> <operation> \\
        --catalog URI [--warehouse W] [--catalog-property k=v ...] \\
        --table db.t [--table db.u | --table db] --options JSON --result URI [--dry-run]

``<operation>`` is a short name of ``firn.maintenance.registry`` (``expire``, ``compact``,
``rewrite-dvs``, ``rewrite-manifests``, ``orphans``, ``flush``, and any operation registered
since), run through ``table.maintenance.operation`` (on v2 tables ``rewrite-dvs`` runs
``rewrite_position_delete_files``).

``--options`` is a JSON object of the operation's options in Iceberg's hyphenated names
(``{"older-than": "2024-01-01T00:00:00Z", "retain-last": 5}``). ``--table`` may repeat, and
may name a namespace (every table in it). Each table is planned on the driver; its work units
run as Spark tasks (:class:`firn.spark.SparkRunner`); the driver commits. ``--dry-run`` only
plans (no Spark tasks, nothing committed).

Where the catalog comes from, first found wins per setting: the command line (``--catalog``,
``--warehouse``, ``--catalog-property``); then the driver's environment: ``FIRN_CATALOG_URI``,
``FIRN_CATALOG_WAREHOUSE`` and ``FIRN_CATALOG_PROPERTIES`` (a JSON object of catalog
properties); then the Spark conf ``spark.firn.catalog.uri`` / ``.warehouse`` / ``.<property>``.
The environment is how a caller passes secrets (a catalog URI with a password, ``s3.*`` keys):
a command line is visible to every user of the machine (``ps``) and is logged by spark-submit
wrappers, a process environment is not. In client or local deploy mode spark-submit hands its
own environment to the driver (the Airflow operators pass these variables through
``SparkSubmitHook(env_vars=...)``). Error messages name a bad variable, never its value.

``--result`` (a local path or a FileIO URI such as ``s3://...``) receives a JSON list with one
entry per table, in order: the operation's typed result (``result.to_dict()``), or with
``--dry-run`` the plan (``plan.to_dict()`` plus ``"dry_run": true`` and its description), or
for a table that failed ``{"operation", "table", "error": {"type", "message"}}``. The job
prints one result line on stdout, last: per table what changed (the result's lineage figures:
files and bytes rewritten, added, deleted), its snapshot and how long it took, then the job's
total time; it exits 1 if any table failed (each error's class and message on stderr), 2 on
bad arguments. An operation the installed Firn does not have is an error naming it.
:func:`path` gives this file's path for operators.

Quiet logs: third-party ``DeprecationWarning`` / ``FutureWarning`` / ``PendingDeprecationWarning``
(pandas, pyarrow, PySpark) are ignored in the driver (Firn's own still show), and
:func:`log_config` is a Log4j 2 configuration at WARN that the Airflow provider passes to the
driver JVM (``spark.driver.extraJavaOptions=-Dlog4j2.configurationFile=...``) and to the
executors, with ``PYTHONWARNINGS`` for the Python workers, so Spark's INFO lines stay out of
the task log. (``spark.sparkContext.setLogLevel`` would come after the start-up lines.)
"""

from __future__ import annotations

import sys

if __name__ == "__main__" and sys.path and sys.path[0].rstrip("/").endswith("firn/spark"):
    # Run as a script, Python puts this directory first on sys.path; its module names must not
    # shadow anything (``firn`` is imported as a package from the zip or the environment).
    sys.path.pop(0)

import argparse
import json
import os
import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

# The driver's catalog from its environment (see the module docstring).
from firn.spark.config import (
    ENV_CATALOG_PROPERTIES,
    ENV_CATALOG_URI,
    ENV_CATALOG_WAREHOUSE,
    environment_options,
)
from firn.util.secrets import mask_secrets

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from firn.catalog.base import Catalog


def path() -> str:
    """The path of this file, for ``spark-submit`` (and the Airflow operators)."""
    return str(Path(__file__).resolve())


def log_config() -> str:
    """The path of the job's Log4j 2 configuration (WARN; see the module docstring)."""
    return str(Path(__file__).resolve().with_name("log4j2.properties"))


# Categories of the third-party warnings the job's log leaves out (PYTHONWARNINGS spelling for
# the Python workers, which start in their own processes).
QUIET_WARNINGS = (DeprecationWarning, FutureWarning, PendingDeprecationWarning)
PYTHON_WORKER_WARNINGS = ",".join(f"ignore::{c.__name__}" for c in QUIET_WARNINGS)


def quiet_warnings() -> None:
    """Ignore third-party deprecation warnings in this process; Firn's own still show."""
    for category in QUIET_WARNINGS:
        warnings.filterwarnings("ignore", category=category)
        warnings.filterwarnings("default", category=category, module=r"firn(\.|$)")


class _ArgumentError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # exit code 2 with the message, no usage dump
        raise _ArgumentError(message)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """The job's arguments (``_ArgumentError`` on bad ones)."""
    p = _Parser(prog="firn-spark-job", description="Run one Firn maintenance operation on Spark.")
    from firn.maintenance.registry import short_names

    p.add_argument("operation", choices=sorted(short_names()))
    p.add_argument("--catalog", help="catalog URI (default: spark.firn.catalog.uri)")
    p.add_argument("--warehouse")
    p.add_argument("--catalog-property", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--table", action="append", required=True, help="db.table or a namespace; repeatable")
    p.add_argument("--options", default="{}", help="JSON object of options (Iceberg names)")
    p.add_argument("--result", required=True, help="where to write the JSON result (path or URI)")
    p.add_argument("--dry-run", action="store_true")
    args = p.parse_args(list(argv))
    try:
        options = json.loads(args.options)
    except json.JSONDecodeError as e:
        raise _ArgumentError(f"--options must be a JSON object: {e}") from None
    if not isinstance(options, dict):
        raise _ArgumentError("--options must be a JSON object")
    args.options = options
    props: dict[str, str] = {}
    for item in args.catalog_property:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise _ArgumentError(f"--catalog-property takes KEY=VALUE, got {item!r}")
        props[key] = value
    args.catalog_property = props
    return args


def resolve_tables(catalog: Catalog, names: Sequence[str]) -> list[str]:
    """Table names: each ``--table`` that is a table, or every table of a namespace."""
    from firn.errors import NotFound

    out: list[str] = []
    for name in names:
        if "." in name and catalog.table_exists(name):
            found = [name]
        elif catalog.namespace_exists(name):
            found = [".".join(ident) for ident in catalog.list_tables(name)]
        else:
            raise NotFound(f"--table {name!r} is neither a table nor a namespace of the catalog")
        out.extend(t for t in found if t not in out)
    return out


def write_result(uri: str, text: str, properties: dict[str, str]) -> None:
    """Write ``text`` to a local path, or through a FileIO for a URI (``s3://``, ``file://``)."""
    if "://" in uri:
        from firn.io.pyarrow_io import load_file_io

        load_file_io(properties, uri).new_output(uri).write(text.encode(), overwrite=True)
        return
    local = Path(uri)
    local.parent.mkdir(parents=True, exist_ok=True)
    local.write_text(text)


def _run_table(
    catalog: Catalog,
    name: str,
    operation: str,
    options: dict[str, Any],
    dry_run: bool,
    spark: SparkSession | None,
) -> dict[str, Any]:
    from firn.maintenance.base import dry_run_entry

    table = catalog.load_table(name)
    op = table.maintenance.operation(operation, options)
    if dry_run:
        return dry_run_entry(op.plan())
    from firn.spark.runner import SparkRunner

    assert spark is not None
    result = op.run(runner=SparkRunner(spark, job_description=f"firn {operation} {name}"))
    out: dict[str, Any] = result.to_dict()
    return out


def run(
    args: argparse.Namespace,
    spark: SparkSession | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """Run the job for parsed ``args``; returns (entries, number of failed tables). The
    catalog comes from ``args``, then ``environ`` (default ``os.environ``), then the Spark conf."""
    from firn.spark.config import CatalogConfig, session_conf

    conf: dict[str, str] = session_conf(spark) if spark is not None else {}
    options = environment_options(os.environ if environ is None else environ)
    options.update({f"catalog.{k}": v for k, v in args.catalog_property.items()})
    if args.catalog:
        options["catalog"] = args.catalog
    if args.warehouse:
        options["warehouse"] = args.warehouse
    config = CatalogConfig.resolve(options, conf)
    catalog = config.load()
    entries: list[dict[str, Any]] = []
    failed = 0
    for name in resolve_tables(catalog, args.table):
        try:
            entries.append(_run_table(catalog, name, args.operation, args.options, args.dry_run, spark))
        except Exception as e:
            failed += 1
            print(mask_secrets(f"{type(e).__name__}: {name}: {e}"), file=sys.stderr)
            entries.append(
                {
                    "operation": args.operation,
                    "table": name,
                    "error": {"type": type(e).__name__, "message": mask_secrets(str(e))},
                }
            )
    write_result(args.result, json.dumps(entries, indent=2, sort_keys=True), dict(config.properties))
    return entries, failed


def table_line(entry: Mapping[str, Any]) -> str:
    """What one table's run changed: ``db.t: files rewritten 12, bytes rewritten 3.10 MiB,
    files added 1, bytes added 1.20 MiB; snapshot 123 in 4.2 s`` (or its error, or "planned")."""
    from firn.util import present

    name = entry.get("table", "?")
    if "error" in entry:
        error = entry["error"]
        return f"{name}: failed: {error.get('type')}: {error.get('message')}"
    if entry.get("dry_run") is True:
        return f"{name}: planned, nothing changed"
    from firn.maintenance.registry import result_from_dict

    try:
        result = result_from_dict(entry)
    except Exception:  # an entry this build cannot read back: name the table only
        return f"{name}: done"
    figures = [
        f"{figure.replace('_', ' ')} {present.size(v) if 'bytes' in figure else present.count(v)}"
        for figure, v in result.lineage_figures().items()
        if v
    ]
    changed = ", ".join(figures) if figures else "nothing to change"
    committed = f"; snapshot {result.snapshot_id}" if result.snapshot_id is not None else "; no commit"
    return f"{name}: {changed}{committed} in {present.duration(result.duration_ms)}"


def summary(args: argparse.Namespace, entries: list[dict[str, Any]], failed: int, seconds: float) -> str:
    """The one result line the job prints last: the count of tables done and failed and the
    job's time, then each table's change (:func:`table_line`), then the result file."""
    done = sum(1 for e in entries if "error" not in e)
    verb = "planned" if args.dry_run else "done"
    tables = "".join(f"; {table_line(e)}" for e in entries)
    return (
        f"firn {args.operation}: {len(entries)} table(s), {done} {verb}, {failed} failed "
        f"in {seconds * 1000:.0f} ms{tables}; result: {args.result}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point (``spark-submit job.py ...``); returns the exit code."""
    started = time.monotonic()
    quiet_warnings()
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
    except _ArgumentError as e:
        print(mask_secrets(f"ArgumentError: {e}"), file=sys.stderr)
        return 2
    spark = None
    try:
        if not (args.dry_run and (args.catalog or os.environ.get(ENV_CATALOG_URI, "").strip())):
            # A dry run plans on the driver alone; it needs Spark only for the conf.
            from pyspark.sql import SparkSession

            spark = SparkSession.builder.appName(f"firn {args.operation}").getOrCreate()
        entries, failed = run(args, spark)
    except Exception as e:
        print(mask_secrets(f"{type(e).__name__}: {e}"), file=sys.stderr)
        return 1
    finally:
        if spark is not None:
            spark.stop()
    print(summary(args, entries, failed, time.monotonic() - started), flush=True)
    return 1 if failed else 0


__all__ = [
    "ENV_CATALOG_PROPERTIES",
    "PYTHON_WORKER_WARNINGS",
    "QUIET_WARNINGS",
    "ENV_CATALOG_URI",
    "ENV_CATALOG_WAREHOUSE",
    "environment_options",
    "log_config",
    "main",
    "parse_args",
    "path",
    "quiet_warnings",
    "run",
    "summary",
    "table_line",
]

if __name__ == "__main__":
    sys.exit(main())
