"""The ``firn`` command: inspect tables and run their maintenance.

::

    firn table list [NAMESPACE]                  firn maintain expire TABLE [-o key=value ...]
    firn table show TABLE                        firn maintain compact TABLE
    firn table snapshots TABLE [--limit N]       firn maintain rewrite-dvs TABLE
    firn table files TABLE [--limit N]           firn maintain rewrite-manifests TABLE
    firn table health TABLE                      firn maintain orphans TABLE
                                                 firn maintain flush TABLE
                                                 firn maintain recommend TABLE [--run]

Every command takes ``--catalog URI`` (or ``FIRN_CATALOG_URI``), ``--catalog-name`` (or
``FIRN_CATALOG_NAME``; one SQL database can hold several catalogs, default ``default``),
``--warehouse`` (or ``FIRN_WAREHOUSE``), ``--catalog-property key=value`` (repeatable), ``--json`` (machine
output on stdout: the health, plan or result JSON, raw numbers) and ``--plain`` (tables as
tab-separated lines); these may also come before the command group (``firn --catalog URI
table list``). Human output reads numbers through :mod:`firn.maintenance.present` (the demo's
and the health page's formatter: 24-hour UTC, durations, binary bytes) and folds long ids and
paths rather than cutting them. ``firn maintain <op>`` runs
the operation its short name names in ``firn.maintenance.registry`` with
options in Iceberg's hyphenated spelling (``-o min-input-files=2``); ``--dry-run`` prints the
plan instead. A run holds the table's maintenance lease. Progress goes to stderr, so ``--json``
output stays parseable.

Exit codes: 0 success; 1 the operation failed (a commit conflict that outlasted its retries, an
unreadable file, groups of a file rewrite that failed: the result, with the groups committed,
skipped as done by an earlier run of the same plan, conflicted and failed, is printed first;
``-o tolerate-failed-groups=true`` makes that a success); 2 bad input (unknown table or option, malformed catalog URI, no
catalog, an operation this table or build does not support, a missing argument or unknown flag:
always one line on stderr); 3 another maintenance run holds
the table's lease (the message names its holder, operation and expiry).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table as RichTable

from firn.catalog import load_catalog
from firn.catalog.base import Catalog, to_identifier
from firn.cli_errors import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_LEASE_HELD,
    CliError,
    FirnGroup,
    cli_errors,
    in_cli_syntax,
    pairs,
)
from firn.cli_serve import serve
from firn.errors import FirnError
from firn.maintenance import registry
from firn.maintenance.base import MaintenanceResult
from firn.maintenance.present import estimate_sentence, health_rows, options_text, recommendation_lines
from firn.maintenance.recommend import Recommendation, run_in_turn
from firn.maintenance.run_record import GroupRunResult, GroupsFailed
from firn.maintenance.runner import LocalRunner
from firn.spec import summary as S
from firn.table.table import Table
from firn.util import present
from firn.util.secrets import is_secret_key

CATALOG_ENV = "FIRN_CATALOG_URI"
CATALOG_NAME_ENV = "FIRN_CATALOG_NAME"
WAREHOUSE_ENV = "FIRN_WAREHOUSE"

F = TypeVar("F", bound=Callable[..., Any])


# -- common options ----------------------------------------------------------------------------------
@dataclass
class Settings:
    catalog: str | None = None
    catalog_name: str | None = None
    warehouse: str | None = None
    properties: tuple[str, ...] = ()
    json: bool = False
    plain: bool = False


def _common_options(fn: F) -> F:
    fn = click.option(
        "--plain",
        is_flag=True,
        default=False,
        help="Tables as tab-separated lines, nothing styled or folded (for cut, awk, copying ids).",
    )(fn)
    fn = click.option(
        "--json", "as_json", is_flag=True, default=False, help="Machine output (JSON) on stdout."
    )(fn)
    fn = click.option(
        "--catalog-property",
        "-p",
        "catalog_properties",
        multiple=True,
        metavar="KEY=VALUE",
        help="A catalog property (repeatable), e.g. s3.endpoint=...",
    )(fn)
    fn = click.option("--warehouse", metavar="PATH", help=f"Where new tables go (env {WAREHOUSE_ENV}).")(fn)
    fn = click.option(
        "--catalog-name",
        metavar="NAME",
        help=f"The catalog's name: one SQL database can hold several (env {CATALOG_NAME_ENV}; default 'default').",
    )(fn)
    fn = click.option(
        "--catalog",
        "catalog_uri",
        metavar="URI",
        help=f"Catalog URI: sqlite:///path.db, postgresql://user@host/db (env {CATALOG_ENV}).",
    )(fn)
    return fn


def _settings(
    catalog_uri: str | None,
    catalog_name: str | None,
    warehouse: str | None,
    catalog_properties: Sequence[str],
    as_json: bool,
    plain: bool,
) -> Settings:
    outer: Settings = click.get_current_context().find_object(Settings) or Settings()
    return Settings(
        catalog=catalog_uri or outer.catalog or os.environ.get(CATALOG_ENV) or None,
        catalog_name=catalog_name or outer.catalog_name or os.environ.get(CATALOG_NAME_ENV) or None,
        warehouse=warehouse or outer.warehouse or os.environ.get(WAREHOUSE_ENV) or None,
        properties=(*outer.properties, *catalog_properties),
        json=as_json or outer.json,
        plain=plain or outer.plain,
    )


def _open_catalog(s: Settings) -> Catalog:
    if not s.catalog:
        raise CliError(f"no catalog: pass --catalog URI or set {CATALOG_ENV}", EXIT_BAD_INPUT)
    uri = s.catalog
    if uri.lower().startswith("sqlite:///"):
        path = uri[len("sqlite:///") :].split("?", 1)[0]
        # SQLite would create a missing file: a typo would silently open an empty catalog.
        if path and path != ":memory:" and not os.path.exists(path):
            raise CliError(f"catalog database {path} does not exist ({uri})", EXIT_BAD_INPUT)
    properties = pairs(s.properties, "--catalog-property")
    secrets = [v for k, v in properties.items() if is_secret_key(k)]
    try:
        return load_catalog(uri, warehouse=s.warehouse, name=s.catalog_name or "default", **properties)
    except FirnError as e:
        raise CliError(f"cannot open catalog {uri}: {e}", EXIT_BAD_INPUT, secrets=secrets) from e
    except Exception as e:  # a URI the database driver rejects (sqlite://relative.db, ...)
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CliError(f"cannot open catalog {uri}: {first}", EXIT_BAD_INPUT, secrets=secrets) from e


def _load(catalog: Catalog, name: str) -> Table:
    return catalog.load_table(to_identifier(name))


def _echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True, default=str))


def _console(err: bool = False) -> Console:
    return Console(stderr=err, soft_wrap=False)


def _ts(ms: int | None) -> str:
    return present.timestamp(ms)


def _show(s: Settings, table: RichTable) -> None:
    """A table on stdout: drawn by rich, ids and paths folded (never cut); with ``--plain``,
    tab-separated lines (a header line first when the table has headers)."""
    if not s.plain:
        _console().print(table)
        return
    columns = table.columns
    if table.show_header:
        click.echo("\t".join(str(c.header) for c in columns))
    for row in zip(*(list(c.cells) for c in columns)):
        click.echo("\t".join(str(cell) for cell in row))


def _kv_table(title: str, rows: Mapping[str, Any]) -> RichTable:
    t = RichTable(title=title, show_header=False, title_justify="left")
    t.add_column("key", style="bold", overflow="fold")
    t.add_column("value", overflow="fold")  # ids and paths are folded, never cut
    for k, v in rows.items():
        counted = isinstance(v, int) and not isinstance(v, bool) and not k.endswith("_id")
        t.add_row(k, "-" if v is None else (f"{v:,}" if counted else str(v)))
    return t


# -- the command groups --------------------------------------------------------------------------------
@click.group(cls=FirnGroup, context_settings={"help_option_names": ["-h", "--help"]})
@_common_options
@click.pass_context
def main(
    ctx: click.Context,
    catalog_uri: str | None,
    catalog_name: str | None,
    warehouse: str | None,
    catalog_properties: tuple[str, ...],
    as_json: bool,
    plain: bool,
) -> None:
    """Firn: inspect Iceberg tables and run their maintenance."""
    ctx.obj = Settings(catalog_uri, catalog_name, warehouse, catalog_properties, as_json, plain)


@main.group()
def table() -> None:
    """Inspect tables: list, show, snapshots, files, health."""


class _MaintainGroup(click.Group):
    """``firn maintain``: one subcommand per registered operation with a short name (read from
    ``firn.maintenance.registry`` when the command line is parsed), plus ``recommend``."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *registry.short_names()})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        found = super().get_command(ctx, cmd_name)
        if found is None and cmd_name in registry.short_names():
            found = _maintain_command(cmd_name, registry.short_names()[cmd_name])
        return found


@main.group(cls=_MaintainGroup)
def maintain() -> None:
    """Run maintenance (holding the table's maintenance lease), or see what is recommended."""


# -- firn table ...
@table.command("list")
@click.argument("namespace", required=False)
@_common_options
def table_list(namespace: str | None, **common: Any) -> None:
    """The tables of NAMESPACE (default: every namespace)."""
    s = _settings(**common)
    catalog = _open_catalog(s)
    with cli_errors():
        if namespace:
            spaces = [to_identifier(namespace)]
        else:
            spaces, todo = [], list(catalog.list_namespaces())
            while todo:
                ns = todo.pop(0)
                spaces.append(ns)
                todo.extend(catalog.list_namespaces(ns))
        names = sorted(".".join(t) for ns in spaces for t in catalog.list_tables(ns))
    if s.json:
        _echo_json(names)
    else:
        for n in names:
            click.echo(n)


@table.command("show")
@click.argument("name", metavar="TABLE")
@_common_options
def table_show(name: str, **common: Any) -> None:
    """A table's location, format, schema, partitioning, refs, properties and lease."""
    s = _settings(**common)
    catalog = _open_catalog(s)
    with cli_errors():
        t = _load(catalog, name)
        holder = catalog.maintenance_lease_holder(t.identifier)
        md = t.metadata
        snap = md.current_snapshot()
        info: dict[str, Any] = {
            "table": t.name,
            "location": t.location,
            "metadata_location": t.metadata_location,
            "format_version": t.format_version,
            "uuid": str(md.table_uuid),
            "current_snapshot_id": snap.snapshot_id if snap else None,
            "snapshots": len(md.snapshots),
            "schema": [
                {"id": f.field_id, "name": f.name, "type": str(f.field_type), "required": f.required}
                for f in t.schema().fields
            ],
            "partition_spec": [
                {"source_id": f.source_id, "name": f.name, "transform": str(f.transform)}
                for f in t.spec().fields
            ],
            "refs": {
                k: {"type": str(r.ref_type.value), "snapshot_id": r.snapshot_id} for k, r in t.refs().items()
            },
            "properties": dict(t.properties),
            "maintenance_lease": holder.to_dict() if holder else None,
        }
    if s.json:
        _echo_json(info)
        return
    scalars = {k: v for k, v in info.items() if not isinstance(v, list | dict) and v is not None}
    scalars["maintenance lease"] = (
        f"{holder.owner} ({holder.operation}) until {_ts(holder.expires_at_ms)}" if holder else "free"
    )
    _show(s, _kv_table(t.name, scalars))
    schema = RichTable("id", "name", "type", "required", title="schema", title_justify="left")
    for f in info["schema"]:
        schema.add_row(str(f["id"]), f["name"], f["type"], "yes" if f["required"] else "")
    _show(s, schema)
    if info["partition_spec"]:
        click.echo(
            "partitioned by " + ", ".join(f"{p['transform']}({p['name']})" for p in info["partition_spec"])
        )
    if info["properties"]:
        _show(s, _kv_table("properties", info["properties"]))


@table.command("snapshots")
@click.argument("name", metavar="TABLE")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the newest N snapshots.")
@_common_options
def table_snapshots(name: str, limit: int | None, **common: Any) -> None:
    """A table's snapshots, newest first."""
    s = _settings(**common)
    with cli_errors():
        t = _load(_open_catalog(s), name)
        snaps = sorted(t.snapshots(), key=lambda x: (x.timestamp_ms, x.sequence_number), reverse=True)
    snaps = snaps[:limit] if limit else snaps
    rows: list[dict[str, Any]] = [
        {
            "snapshot_id": x.snapshot_id,
            "parent_snapshot_id": x.parent_snapshot_id,
            "timestamp_ms": x.timestamp_ms,
            "operation": x.summary.operation.value,
            "summary": dict(x.summary.properties),
        }
        for x in snaps
    ]
    if s.json:
        _echo_json(rows)
        return
    out = RichTable(title=t.name)
    for head in ("snapshot", "parent", "committed", "operation", "data files", "records"):
        out.add_column(head, overflow="fold")
    for r in rows:
        summary = r["summary"]
        out.add_row(
            str(r["snapshot_id"]),
            str(r["parent_snapshot_id"] or "-"),
            _ts(r["timestamp_ms"]),
            r["operation"],
            summary.get(S.TOTAL_DATA_FILES, "-"),
            summary.get(S.TOTAL_RECORDS, "-"),
        )
    _show(s, out)


@table.command("files")
@click.argument("name", metavar="TABLE")
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True, help="At most N files.")
@_common_options
def table_files(name: str, limit: int, **common: Any) -> None:
    """The data files of the current snapshot, with the delete files that apply to each."""
    s = _settings(**common)
    with cli_errors():
        t = _load(_open_catalog(s), name)
        tasks = t.scan().plan_files()
        rows: list[dict[str, Any]] = []
        for task in tasks:
            if len(rows) >= limit:
                break
            f = task.file
            rows.append(
                {
                    "path": f.file_path,
                    "format": f.file_format.value,
                    "records": f.record_count,
                    "size": f.file_size_in_bytes,
                    "delete_files": len(task.delete_files),
                }
            )
        total = len(tasks)
    if s.json:
        _echo_json({"files": total, "shown": rows})
        return
    out = RichTable(title=f"{t.name}: {total:,} data files")
    for head in ("path", "format", "records", "bytes", "deletes"):
        out.add_column(head, overflow="fold")
    for r in rows:
        out.add_row(r["path"], r["format"], f"{r['records']:,}", f"{r['size']:,}", str(r["delete_files"]))
    _show(s, out)
    if total > len(rows):
        click.echo(f"({total - len(rows):,} more; --limit to see them)")


@table.command("health")
@click.argument("name", metavar="TABLE")
@_common_options
def table_health_cmd(name: str, **common: Any) -> None:
    """Maintenance metrics of the current snapshot, read from metadata only."""
    s = _settings(**common)
    with cli_errors():
        health = _load(_open_catalog(s), name).health()
    if s.json:
        click.echo(health.to_json())
        return
    _show(s, _kv_table(f"health of {health.table}", dict(health_rows(health))))


# -- firn maintain ...
class _ProgressDisplay:
    """A rich progress display on stderr, fed by ``LocalRunner(progress=...)``."""

    def __init__(self, title: str, enabled: bool) -> None:
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=_console(err=True),
            disable=not enabled,
            transient=False,
        )
        self.title = title
        self.batches = 0
        self.task: Any = None

    def __enter__(self) -> _ProgressDisplay:
        self.progress.__enter__()
        self.task = self.progress.add_task(self.title, total=None)
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.update(self.task, total=1, completed=1)
        self.progress.__exit__(None, None, None)

    def __call__(self, done: int, total: int) -> None:
        if done == 0:
            self.batches += 1
            phase = "work units" if self.batches == 1 else "cleanup units"
            self.task = self.progress.add_task(f"{self.title}: {phase}", total=total)
        self.progress.update(self.task, completed=done, total=total)


def _progress_enabled(flag: bool | None) -> bool:
    return flag if flag is not None else sys.stderr.isatty()


def _run(
    table: Table, operation: str, options: dict[str, Any], dry_run: bool, s: Settings, progress: bool | None
) -> None:
    method = registry.spec_for_table(operation, table.format_version).name
    op = table.maintenance.operation(operation, options)
    if dry_run:
        plan = op.plan()
        click.echo(plan.to_json() if s.json else in_cli_syntax(str(plan)))
        return
    failure: GroupsFailed | None = None
    with _ProgressDisplay(f"{method} on {table.name}", _progress_enabled(progress)) as display:
        try:
            result = op.run(runner=LocalRunner(progress=display))
        except GroupsFailed as e:  # what did commit is printed, then the run fails
            result, failure = e.result, e
    _print_result(f"{method} on {table.name}", result, s)
    if failure is not None:
        raise CliError(f"{type(failure).__name__}: {failure}", EXIT_FAILED)


def _print_result(title: str, result: MaintenanceResult, s: Settings) -> None:
    if s.json:
        click.echo(result.to_json())
        return
    data = result.to_dict()
    report = result.group_report() if isinstance(result, GroupRunResult) else []
    if report:  # groups are printed by the report below, with their reasons
        data.pop("failed_groups", None)
    skipped = data.pop("skipped", [])
    data["skipped"] = len(skipped)
    # Lists of paths (orphans recorded and deleted, ...) are counted in the table and the
    # first ones printed under it, like what was skipped or kept and why.
    listed = {k: v for k, v in data.items() if isinstance(v, list)}
    data.update({k: len(v) for k, v in listed.items()})
    _show(s, _kv_table(title, data))
    for line in report:
        click.echo(line)
    for key, paths in listed.items():
        for path in paths[:20]:
            click.echo(f"{key}: {path}")
        if len(paths) > 20:
            click.echo(f"{key}: ... {len(paths) - 20} more")
    for item in skipped[:20]:
        click.echo(f"skipped {item['item']}: {item['reason']}")
    if len(skipped) > 20:
        click.echo(f"skipped: ... {len(skipped) - 20} more (--json lists all)")


def _maintain_command(short: str, method: str) -> click.Command:
    spec = registry.spec(method)
    fallback = f" ({spec.fallback[1]} below format version {spec.fallback[0]})" if spec.fallback else ""

    @click.command(
        short,
        help=f"Run table.maintenance.{method} on TABLE{fallback}: {spec.summary}. Options use "
        "Iceberg's names, e.g. -o key=value; an unknown name lists the close matches.",
    )
    @click.argument("name", metavar="TABLE")
    @click.option(
        "--option",
        "-o",
        "options",
        multiple=True,
        metavar="KEY=VALUE",
        help="An operation option (repeatable).",
    )
    @click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
    @click.option(
        "--progress/--no-progress",
        default=None,
        help="Progress bars on stderr (default: when it is a terminal).",
    )
    @_common_options
    def command(
        name: str, options: tuple[str, ...], dry_run: bool, progress: bool | None, **common: Any
    ) -> None:
        s = _settings(**common)
        opts = pairs(options, "--option")
        catalog = _open_catalog(s)
        with cli_errors():
            _run(_load(catalog, name), short, dict(opts), dry_run, s, progress)

    return command


def _print_recommendations(s: Settings, name: str, recs: list[Recommendation]) -> None:
    """Numbered paragraphs, options in this CLI's syntax (``-o key=value``), so each line can
    be pasted after ``firn maintain <operation> TABLE``; ``--plain``: one tab-separated line
    per recommendation."""
    if s.plain:
        click.echo("operation\toptions\treason\tgain")
        for r in recs:
            click.echo(
                "\t".join(
                    (r.operation, options_text(r.options, "cli"), r.reason, estimate_sentence(r.estimate))
                )
            )
        return
    click.echo(f"recommended for {name}:")
    for line in recommendation_lines(recs, "cli"):
        click.echo(line)


@maintain.command("recommend")
@click.argument("name", metavar="TABLE")
@click.option("--run", "run_them", is_flag=True, help="Run the recommended operations, in order.")
@click.option(
    "--progress/--no-progress", default=None, help="Progress bars on stderr (default: when it is a terminal)."
)
@_common_options
def maintain_recommend(name: str, run_them: bool, progress: bool | None, **common: Any) -> None:
    """The maintenance worth running on TABLE now, in nightly order, from its health."""
    s = _settings(**common)
    catalog = _open_catalog(s)
    with cli_errors():
        t = _load(catalog, name)
        recs = t.maintenance.recommend()
        if not run_them:
            if s.json:
                _echo_json([r.to_dict() for r in recs])
            elif recs:
                _print_recommendations(s, t.name, recs)
            else:
                click.echo(f"{t.name}: nothing to do")
            return

        def run_one(r: Recommendation) -> dict[str, Any]:
            op = t.maintenance.operation(r.operation, dict(r.options))
            with _ProgressDisplay(f"{r.operation} on {t.name}", _progress_enabled(progress)) as display:
                out = op.run(runner=LocalRunner(progress=display)).to_dict()
            t.refresh()
            return out

        results, satisfied = run_in_turn(recs, t.maintenance.recommend, run_one)
    if s.json:
        _echo_json(
            {"recommendations": [r.to_dict() for r in recs], "results": results, "satisfied": satisfied}
        )
        return
    if not recs:
        click.echo(f"{t.name}: nothing to do")
        return
    summary = RichTable("operation", "snapshot", "took", title=f"maintenance of {t.name}")
    summary.columns[1].overflow = "fold"
    for res in results:
        summary.add_row(
            res["operation"], str(res.get("snapshot_id") or "-"), present.duration(res.get("duration_ms"))
        )
    for name in satisfied:
        summary.add_row(name, "-", "not run: an earlier operation did its work")
    _show(s, summary)


main.add_command(serve)


if __name__ == "__main__":  # pragma: no cover
    main()


__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILED", "EXIT_LEASE_HELD", "main"]
