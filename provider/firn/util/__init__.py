"""Shared helpers with no Iceberg knowledge: caches, Arrow chunk helpers, the collector pause,
the package version. Public to every Firn package that needs them."""
