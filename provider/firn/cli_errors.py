"""What every ``firn`` command shares for failing: :class:`CliError` (one line on stderr, a
documented exit code, secrets masked), library errors translated to it with the options they
name in the CLI's spelling, and ``KEY=VALUE`` arguments."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import click
from click.exceptions import NoArgsIsHelpError

from firn.errors import FirnError, LeaseHeld, NotFound, Unsupported, ValidationError
from firn.maintenance.remove_orphan_files import DRY_RUN_HINT_CLI, DRY_RUN_HINT_PYTHON
from firn.util.secrets import mask_secrets

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_LEASE_HELD = 3


class CliError(click.ClickException):
    """A one-line error with its exit code; secrets in it (a catalog URI's password, a secret
    property, any of ``secrets``) are masked (``firn.util.secrets``)."""

    def __init__(self, message: str, exit_code: int, *, secrets: Iterable[str] = ()) -> None:
        super().__init__(mask_secrets(" ".join(message.split()), secrets))
        self.exit_code = exit_code  # type: ignore[misc]  # click declares it on the class

    def show(self, file: Any = None) -> None:
        click.echo(f"firn: error: {self.message}", err=True)


class FirnGroup(click.Group):
    """The root group: click's usage errors (a missing argument, an unknown flag or command)
    are one line on stderr with exit code 2, like every other bad input."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except NoArgsIsHelpError as e:  # a bare group (``firn``, ``firn maintain``): its help
            e.show()
            sys.exit(e.exit_code)
        except click.UsageError as e:
            where = f" (see '{e.ctx.command_path} --help')" if e.ctx is not None else ""
            message = mask_secrets(" ".join(e.format_message().split()))
            click.echo(f"firn: error: {message}{where}", err=True)
            sys.exit(EXIT_BAD_INPUT)
        except click.ClickException as e:
            e.show()
            sys.exit(e.exit_code)
        except click.Abort:
            click.echo("firn: aborted", err=True)
            sys.exit(EXIT_FAILED)
        sys.exit(code if isinstance(code, int) else 0)


# "pass force=True", "Pass sort_order='id DESC'": a library message naming a Python keyword.
_PYTHON_OPTION = re.compile(r"\b([Pp])ass ([a-z][a-z0-9_]*)=(True|False|'[^']*'|[^\s,;)]+)")


def in_cli_syntax(text: str) -> str:
    """A library message with the CLI's spelling of the options it names: ``pass
    delete=True`` becomes ``pass -o dry-run=false``."""

    def cli(m: re.Match[str]) -> str:
        value = m.group(3)
        value = value.lower() if value in ("True", "False") else value
        return f"{m.group(1)}ass -o {m.group(2).replace('_', '-')}={value}"

    return _PYTHON_OPTION.sub(cli, text.replace(DRY_RUN_HINT_PYTHON, DRY_RUN_HINT_CLI))


@contextmanager
def cli_errors() -> Iterator[None]:
    """FirnErrors as one-line messages with the documented exit codes."""
    try:
        yield
    except LeaseHeld as e:
        raise CliError(str(e), EXIT_LEASE_HELD) from e
    except (ValidationError, NotFound, Unsupported) as e:
        raise CliError(in_cli_syntax(str(e)), EXIT_BAD_INPUT) from e
    except FirnError as e:
        raise CliError(f"{type(e).__name__}: {in_cli_syntax(str(e))}", EXIT_FAILED) from e


def pairs(values: Sequence[str], what: str, sep: str = "=", shape: str = "KEY=VALUE") -> dict[str, str]:
    out: dict[str, str] = {}
    for item in values:
        key, found, value = item.partition(sep)
        if not found or not key.strip():
            raise CliError(f"{what} must be {shape}, got {item!r}", EXIT_BAD_INPUT)
        out[key.strip()] = value
    return out


__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_FAILED",
    "EXIT_LEASE_HELD",
    "CliError",
    "FirnGroup",
    "cli_errors",
    "in_cli_syntax",
    "pairs",
]
