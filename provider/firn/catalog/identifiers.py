"""The one rule for names: what a namespace level, table name or view name may be.

Every catalog (SQL, in-memory, the REST client) and the REST server check names here, through
:func:`firn.catalog.base.to_identifier`, so a name is accepted or refused the same way
whichever door it comes through (issue 18, item 1).

A name becomes a path segment: the default location of a table is
``<warehouse>/<namespace>/<table>``. A name that is a path of its own would put the table
somewhere else: ``..`` at the warehouse root, ``.`` at the namespace directory, ``a/b``
inside table ``a``, ``../../x`` outside the warehouse. So a name is refused when it is:

* empty or only whitespace;
* ``.`` or ``..`` (also percent-encoded, e.g. ``%2e%2e``: some stores and engines decode);
* holds a path separator, ``/`` or ``\\`` (also percent-encoded);
* holds a control character (C0 including NUL, DEL, C1) or a lone surrogate (JSON's
  ``"\\ud800"`` decodes to one; it cannot be encoded as UTF-8, so no database, file system
  or HTTP answer can hold it);
* longer than :data:`MAX_NAME_BYTES` bytes of UTF-8 (a path segment longer than 255 bytes
  is refused by most file systems, and the SQL catalog's columns hold 255 characters).

Iceberg Java's catalogs accept most of these; Apache Polaris refuses names that are not
valid path segments. Everything else (dots inside a table name, spaces, non-ASCII letters)
is allowed. Catalogs that store namespaces dot-joined add their own rule that a namespace
level may not contain ``.`` (:class:`~firn.catalog.base_catalog.BaseCatalog`).
"""

from __future__ import annotations

import unicodedata
from urllib.parse import unquote

from firn.errors import ValidationError

# The longest name, in bytes of UTF-8: the common file system limit on one path segment
# (ext4, XFS, APFS, NTFS in UTF-16 units) and the SQL catalog's VARCHAR(255).
MAX_NAME_BYTES = 255

_SEPARATORS = ("/", "\\")
_RELATIVE = (".", "..")
# Unicode categories refused anywhere in a name: control characters and surrogates.
_REFUSED_CATEGORIES = frozenset({"Cc", "Cs"})


def shown_name(name: str) -> str:
    """``name`` for an error message: escaped (``repr`` escapes controls and surrogates, so
    the message is always valid UTF-8) and cut to a readable length."""
    return repr(name if len(name) <= 80 else name[:80] + "...")


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot be a namespace level, table name or view name; None if it can."""
    if not isinstance(name, str):
        return f"must be a string, got {type(name).__name__}"
    if not name.strip():
        return "is empty"
    bad = next((c for c in name if unicodedata.category(c) in _REFUSED_CATEGORIES), None)
    if bad is not None:
        kind = "a lone surrogate" if unicodedata.category(bad) == "Cs" else "the control character"
        return f"contains {kind} {bad!r}"
    decoded = unquote(name)
    if name in _RELATIVE or decoded in _RELATIVE:
        return "is a relative path segment ('.' and '..' would place it outside its namespace)"
    if any(sep in name or sep in decoded for sep in _SEPARATORS):
        return "contains a path separator ('/' or '\\')"
    size = len(name.encode("utf-8"))
    if size > MAX_NAME_BYTES:
        return f"is {size} bytes long in UTF-8; the limit is {MAX_NAME_BYTES}"
    return None


def check_name(name: object, *, what: str = "name") -> str:
    """``name`` if it may be a namespace level, table name or view name (see the module
    docstring); ``ValidationError`` naming ``what`` and the problem otherwise."""
    if not isinstance(name, str):
        raise ValidationError(f"invalid {what} {name!r}: it must be a string")
    problem = name_problem(name)
    if problem is not None:
        raise ValidationError(f"invalid {what} {shown_name(name)}: it {problem}")
    return name


__all__ = ["MAX_NAME_BYTES", "check_name", "name_problem", "shown_name"]
