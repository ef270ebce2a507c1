"""The table core: commits, producers, the legacy and V4 metadata trees, actions, planning,
reading and writing. It sees a table only through :class:`firn.core.handle.TableHandle`."""
