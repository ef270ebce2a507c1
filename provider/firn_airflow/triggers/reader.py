"""One table, read through a :class:`~firn_airflow.hooks.firn.FirnHook` from a worker thread.

Firn's catalogs and ``table.health()`` are synchronous, so triggers call :meth:`TableReader.load`
through ``asyncio.to_thread`` and never block the triggerer's event loop. The hook module (and
with it the Firn library) is imported by the first :meth:`TableReader.load`, in that thread. The hook (and with
it the catalog's database connections) is kept between polls: a poll of an unchanged table
then costs one catalog lookup and one metadata read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from firn.table.table import Table
    from firn_airflow.hooks.firn import FirnHook


class TableReader:
    """Loads ``table`` through the Firn connection ``firn_conn_id``; blocking, not thread-safe.

    Calls are made one at a time (each trigger awaits its previous poll), possibly from
    different worker threads, which the catalogs' connection pools allow.
    """

    def __init__(self, firn_conn_id: str, table: str) -> None:
        self.firn_conn_id = firn_conn_id
        self.table = table
        self._hook: FirnHook | None = None

    def load(self) -> Table:
        """The table's current metadata (freshly loaded from the catalog)."""
        if self._hook is None:
            # Imported here, in the polling thread: the hook imports the whole Firn library,
            # which must not happen in the triggerer's event loop.
            from firn_airflow.hooks.firn import FirnHook

            self._hook = FirnHook(self.firn_conn_id)
        return self._hook.load_table(self.table)

    def close(self) -> None:
        """Release the catalog; the next :meth:`load` opens it again."""
        hook, self._hook = self._hook, None
        if hook is not None:
            hook.close()


__all__ = ["TableReader"]
