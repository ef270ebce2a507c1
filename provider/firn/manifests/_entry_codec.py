"""A manifest-entry decoder generated per writer schema (spec Appendix A, Avro 1.11 binary encoding).

fastavro decodes an entry into nested dicts (one dict per stats-map item: a 10-column
manifest builds ~70 dicts per entry), and the manifest reader then walks those dicts again.
This module instead generates, once per writer schema text, a Python function that decodes
one Avro block straight into a tuple of the requested fields per entry:

* the ``manifest_entry`` and ``data_file`` fields are picked **by field id** (as the fastavro
  path does), and each becomes a local variable — no dict per entry;
* int-keyed stats maps (arrays of ``k/v`` records) decode straight into ``{key: value}``;
* fields nobody asked for are *skipped*: a varint by its continuation bits, a string or bytes
  value by its length prefix, a run of ``k`` varints (a block of an int→long stats map) with
  one compiled regular expression, so projected reads (health, reachability) build nothing
  for the stats they do not need;
* values are fastavro's for everything else (records as dicts, ``decimal`` → ``Decimal``,
  string ``uuid`` → ``UUID``, other logical types as their physical ints), so the partition
  decoder is shared with the fastavro path.

Why not a compiled extension: PyIceberg's Cython reader is the peer to beat and the project
installs from wheels with no compiler; a straight-line generated function avoids per-field
dispatch, which is where a schema-driven Python or Cython reader spends its time.

Schemas or codecs outside what the generator handles raise :class:`NotGenerated`, and callers
fall back to fastavro. The object-container framing (header, sync markers, codecs ``null`` and
``deflate``) is parsed here too; any damage raises ``ValueError``/``IndexError``, which callers
wrap as ``InvalidMetadata`` naming the file.
"""

from __future__ import annotations

import functools
import json
import re
import struct
import uuid
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from firn.manifests._avro_io import named_types, record_fields_by_id
from firn.spec import values

MAGIC = b"Obj\x01"
SYNC_SIZE = 16
GENERATED_CODECS = ("null", "deflate")
# Nesting deeper than this is no Iceberg manifest (and guards against recursive named types).
_MAX_DEPTH = 12


class NotGenerated(Exception):
    """The schema or codec is one the generator does not handle; use the fastavro path."""


# -- varints ---------------------------------------------------------------------------------------
def read_long(buf: bytes, pos: int) -> tuple[int, int]:
    """The zig-zag varint at ``pos`` and the position after it."""
    b = buf[pos]
    n = b & 0x7F
    shift = 7
    pos += 1
    while b & 0x80:
        b = buf[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if shift > 70:
            raise ValueError("varint longer than 10 bytes")
    return (n >> 1) ^ -(n & 1), pos


_VARINT = b"[\\x80-\\xff]*[\\x00-\\x7f]"

# A string or bytes value shorter than 64 bytes: a one-byte length 2n, then n bytes.
_SHORT_BYTES = b"(?:" + b"|".join(re.escape(bytes([2 * n])) + b".{%d}" % n for n in range(64)) + b")"

# Zig-zag decoded values of every one- and two-byte varint payload (14 bits): a table lookup
# is cheaper in CPython than the shift-and-xor.
_ZIGZAG_14 = tuple((n >> 1) ^ -(n & 1) for n in range(1 << 14))


@functools.lru_cache(maxsize=512)
def _varint_run(count: int) -> re.Pattern[bytes]:
    # ``count`` varints: each is continuation bytes (high bit set) then one final byte.
    return re.compile(rb"(?:[\x80-\xff]*[\x00-\x7f]){%d}" % count, re.DOTALL)


@functools.lru_cache(maxsize=1024)
def _items(item: bytes, count: int) -> re.Pattern[bytes]:
    # ``count`` items of one pattern; compiled once per (item pattern, count), and a table's
    # stats maps have one or a few distinct counts (its column count).
    return re.compile(b"(?:" + item + b"){%d}" % count, re.DOTALL)


def skip_varints(buf: bytes, pos: int, count: int) -> int:
    """The position after ``count`` varints starting at ``pos``."""
    m = _varint_run(count).match(buf, pos)
    if m is None:
        raise ValueError(f"block of {count} varints runs past the end of the data")
    return m.end()


# -- container framing -----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Container:
    """An Avro object container file's header: metadata (``avro.*`` keys included), the writer
    schema text, codec and sync marker, and where the first block starts."""

    metadata: dict[str, str]
    schema_json: str
    codec: str
    sync: bytes
    body: int


def read_container(data: bytes) -> Container:
    """Parse the header. Raises ``ValueError``/``IndexError`` on a damaged one."""
    if data[:4] != MAGIC:
        raise ValueError("not an Avro object container file (bad magic)")
    pos = 4
    meta: dict[str, str] = {}
    while True:
        count, pos = read_long(data, pos)
        if count == 0:
            break
        if count < 0:
            count = -count
            _, pos = read_long(data, pos)
        for _ in range(count):
            n, pos = read_long(data, pos)
            key = data[pos : pos + n].decode()
            pos += n
            n, pos = read_long(data, pos)
            if n < 0 or pos + n > len(data):
                raise ValueError("header metadata runs past the end of the file")
            meta[key] = data[pos : pos + n].decode()
            pos += n
    sync = data[pos : pos + SYNC_SIZE]
    if len(sync) != SYNC_SIZE:
        raise ValueError("header ends before its sync marker")
    codec = meta.get("avro.codec", "null") or "null"
    return Container(meta, meta.get("avro.schema", ""), codec, sync, pos + SYNC_SIZE)


def blocks(data: bytes, container: Container) -> Iterator[tuple[bytes, int]]:
    """Each block's decoded bytes and record count, checking sizes and sync markers."""
    if container.codec not in GENERATED_CODECS:
        raise NotGenerated(f"codec {container.codec}")
    deflate = container.codec == "deflate"
    sync = container.sync
    pos = container.body
    end = len(data)
    while pos < end:
        count, pos = read_long(data, pos)
        size, pos = read_long(data, pos)
        if count < 0 or size < 0 or pos + size + SYNC_SIZE > end:
            raise ValueError(f"block of {size} bytes at offset {pos} runs past the end of the file")
        raw = data[pos : pos + size]
        pos += size
        if data[pos : pos + SYNC_SIZE] != sync:
            raise ValueError(f"sync marker mismatch at offset {pos}")
        pos += SYNC_SIZE
        block = zlib.decompress(raw, -15) if deflate else raw
        if count > len(block):  # every manifest record is at least one byte
            raise ValueError(f"block claims {count} records in {len(block)} bytes")
        yield block, count


# -- code generation -------------------------------------------------------------------------------
BlockDecoder = Callable[[bytes, int, int, list[tuple[Any, ...]]], int]


class _Gen:
    def __init__(self, named: Mapping[str, Any]) -> None:
        self.named = named
        self.n = 0
        self.consts: dict[str, Any] = {}

    def tmp(self, stem: str) -> str:
        self.n += 1
        return f"{stem}{self.n}"

    def const(self, value: Any) -> str:
        name = self.tmp("K")
        self.consts[name] = value
        return name

    def resolve(self, t: Any, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise NotGenerated("schema nests too deep")
        if isinstance(t, str) and t in self.named:
            return self.named[t]
        if isinstance(t, dict) and t.get("type") in ("record", "enum", "fixed", "array", "map"):
            return t
        if isinstance(t, dict):
            inner = t.get("type")
            if not isinstance(inner, str) or inner in self.named:
                return self.resolve(inner, depth + 1)
        return t

    # lines that decode a long into ``target``
    @staticmethod
    def long(target: str, ind: str) -> list[str]:
        # One- to three-byte varints (field ids, counts, lengths, most stats and sizes) inline;
        # longer ones (snapshot ids) through read_long.
        return [
            f"{ind}b = buf[pos]",
            f"{ind}if b < 128:",
            f"{ind}    {target} = _zz[b]; pos += 1",
            f"{ind}elif buf[pos + 1] < 128:",
            f"{ind}    {target} = _zz[(b & 127) | (buf[pos + 1] << 7)]; pos += 2",
            f"{ind}elif buf[pos + 2] < 128:",
            f"{ind}    b = (b & 127) | ((buf[pos + 1] & 127) << 7) | (buf[pos + 2] << 14)",
            f"{ind}    {target} = (b >> 1) ^ -(b & 1); pos += 3",
            f"{ind}else:",
            f"{ind}    {target}, pos = _rl(buf, pos)",
        ]

    @staticmethod
    def skip_long(ind: str) -> list[str]:
        return [f"{ind}while buf[pos] > 127: pos += 1", f"{ind}pos += 1"]

    def value(self, t: Any, target: str, ind: str, depth: int, int_keys: bool = False) -> list[str]:
        """Lines decoding a value of Avro type ``t`` into ``target``."""
        t = self.resolve(t, depth)
        if isinstance(t, list):
            return self.union(t, target, ind, depth, int_keys)
        prim, logical = (t, None) if isinstance(t, str) else (t.get("type"), t.get("logicalType"))
        if prim in ("int", "long"):
            return self.long(target, ind)
        if prim == "null":
            return [f"{ind}{target} = None"]
        if prim == "boolean":
            return [f"{ind}{target} = buf[pos] != 0; pos += 1"]
        if prim in ("float", "double"):
            fmt, size = ("<f", 4) if prim == "float" else ("<d", 8)
            return [f"{ind}{target} = _unpack({fmt!r}, buf, pos)[0]; pos += {size}"]
        if prim in ("string", "bytes", "fixed"):
            n = self.tmp("n")
            if prim == "fixed":
                size = int(t["size"])
                lines = [f"{ind}{target} = buf[pos:pos + {size}]; pos += {size}"]
            else:
                # A length past the block's end is caught when the block does not end where its
                # records do (decode_entries); a negative one would step backwards.
                decode = ".decode()" if prim == "string" else ""
                lines = [
                    *self.long(n, ind),
                    f"{ind}if {n} < 0: raise ValueError('negative length')",
                    f"{ind}{target} = buf[pos:pos + {n}]{decode}; pos += {n}",
                ]
            if logical == "decimal":
                lines.append(
                    f"{ind}{target} = _decimal(int.from_bytes({target}, 'big', signed=True), {int(t.get('scale', 0))})"
                )
            elif logical == "uuid" and prim == "string":
                lines.append(f"{ind}{target} = _uuid({target})")
            return lines
        if prim == "enum":
            symbols = self.const(tuple(t["symbols"]))
            return [*self.long(target, ind), f"{ind}{target} = {symbols}[{target}]"]
        if prim == "record":
            out: list[str] = []
            parts = []
            for f in t.get("fields", ()):
                v = self.tmp("v")
                out += self.value(f["type"], v, ind, depth + 1)
                parts.append(f"{str(f['name'])!r}: {v}")
            out.append(f"{ind}{target} = {{{', '.join(parts)}}}")
            return out
        if prim in ("array", "map"):
            return self.collection(t, target, ind, depth, int_keys)
        raise NotGenerated(f"Avro type {t!r}")

    def union_index(self, idx: str, ind: str, branches: int) -> list[str]:
        # A branch index below 64 is one byte holding twice the index (zig-zag); compare the
        # raw byte instead of decoding it.
        if branches > 63:
            raise NotGenerated("union with more than 63 branches")
        return [f"{ind}{idx} = buf[pos]; pos += 1"]

    def union(self, branches: list[Any], target: str, ind: str, depth: int, int_keys: bool) -> list[str]:
        idx = self.tmp("u")
        lines = self.union_index(idx, ind, len(branches))
        for i, branch in enumerate(branches):
            lines.append(f"{ind}{'if' if i == 0 else 'elif'} {idx} == {2 * i}:")
            lines += self.value(branch, target, ind + "    ", depth + 1, int_keys)
        lines.append(f"{ind}else: raise ValueError('union branch index out of range')")
        return lines

    def _blocks(self, count: str, ind: str) -> list[str]:
        # An array or map is a run of blocks, each a count (negative: followed by its byte
        # size), ended by a zero count. Items are at least one byte (zero-byte item schemas are
        # refused in _avro_io), so a count larger than the bytes left is damage, not data.
        return [
            f"{ind}while True:",
            *self.long(count, ind + "    "),
            f"{ind}    if {count} == 0: break",
            f"{ind}    if {count} < 0:",
            f"{ind}        {count} = -{count}",
            *self.skip_long(ind + "        "),
            f"{ind}    if {count} > len(buf) - pos: raise ValueError('array block count exceeds the data')",
        ]

    def collection(
        self, t: Mapping[str, Any], target: str, ind: str, depth: int, int_keys: bool
    ) -> list[str]:
        c = self.tmp("c")
        inner = ind + "        "
        if t["type"] == "map":
            k, v = self.tmp("k"), self.tmp("v")
            key_lines = self.value("string", k, inner, depth + 1)
            if int_keys:
                key_lines.append(f"{inner}{k} = int({k})")
            body = [*key_lines, *self.value(t["values"], v, inner, depth + 1), f"{inner}{target}[{k}] = {v}"]
            return [f"{ind}{target} = {{}}", *self._blocks(c, ind), f"{ind}    for _ in range({c}):", *body]
        item = self.resolve(t["items"], depth + 1)
        kv = (
            isinstance(item, dict)
            and item.get("type") == "record"
            and [f.get("name") for f in item.get("fields", ())] == ["key", "value"]
        )
        if kv:  # Appendix A: an int-keyed map is an array of key/value records
            kf, vf = item["fields"]
            k, v = self.tmp("k"), self.tmp("v")
            body = [
                *self.value(kf["type"], k, inner, depth + 2),
                *self.value(vf["type"], v, inner, depth + 2),
                f"{inner}{target}[{k}] = {v}",
            ]
            return [f"{ind}{target} = {{}}", *self._blocks(c, ind), f"{ind}    for _ in range({c}):", *body]
        it = self.tmp("i")
        body = [*self.value(item, it, inner, depth + 1), f"{inner}{target}.append({it})"]
        return [f"{ind}{target} = []", *self._blocks(c, ind), f"{ind}    for _ in range({c}):", *body]

    # -- skipping ------------------------------------------------------------------------------------
    def skip(self, t: Any, ind: str, depth: int) -> list[str]:
        """Lines that step over a value of Avro type ``t`` without building it."""
        t = self.resolve(t, depth)
        if isinstance(t, list):
            idx = self.tmp("u")
            lines = self.union_index(idx, ind, len(t))
            for i, branch in enumerate(t):
                body = self.skip(branch, ind + "    ", depth + 1) or [f"{ind}    pass"]
                lines += [f"{ind}{'if' if i == 0 else 'elif'} {idx} == {2 * i}:", *body]
            lines.append(f"{ind}else: raise ValueError('union branch index out of range')")
            return lines
        prim = t if isinstance(t, str) else t.get("type")
        if prim in ("int", "long", "enum"):
            return self.skip_long(ind)
        if prim == "null":
            return []
        if prim == "boolean":
            return [f"{ind}pos += 1"]
        if prim == "float":
            return [f"{ind}pos += 4"]
        if prim == "double":
            return [f"{ind}pos += 8"]
        if prim == "fixed":
            return [f"{ind}pos += {int(t['size'])}"]
        if prim in ("string", "bytes"):
            n = self.tmp("n")
            return [
                *self.long(n, ind),
                f"{ind}if {n} < 0: raise ValueError('negative length')",
                f"{ind}pos += {n}",
            ]
        if prim == "record":
            lines = []
            for f in t.get("fields", ()):
                lines += self.skip(f["type"], ind, depth + 1)
            return lines
        if prim in ("array", "map"):
            c = self.tmp("c")
            if prim == "map":
                per_item = [*self.skip("string", ind + "        ", depth + 1)]
                per_item += self.skip(t["values"], ind + "        ", depth + 1)
                varints = 0
            else:
                per_item = self.skip(t["items"], ind + "        ", depth + 1)
                varints = self._varints_only(t["items"], depth + 1)
            lines = self._blocks(c, ind)
            item = None if prim == "map" else self.pattern(t["items"], depth + 1)
            if varints:  # items made only of varints: one regex match steps over the block
                lines.append(f"{ind}    pos = _skipv(buf, pos, {c} * {varints})")
            elif item is not None:  # e.g. bounds: one match per block in the common form
                m, k = self.tmp("m"), self.const(item)
                lines += [
                    f"{ind}    {m} = _items({k}, {c}).match(buf, pos)",
                    f"{ind}    if {m} is not None:",
                    f"{ind}        pos = {m}.end()",
                    f"{ind}    else:",
                    f"{ind}      for _ in range({c}):",
                    *(per_item or [f"{ind}        pass"]),
                ]
            else:
                lines += [f"{ind}    for _ in range({c}):", *(per_item or [f"{ind}        pass"])]
            return lines
        raise NotGenerated(f"Avro type {t!r}")

    # -- skipping by regular expression ---------------------------------------------------------------
    def pattern(self, t: Any, depth: int) -> bytes | None:
        """A regular expression matching one encoded value of ``t`` in its common form, or None.

        The common form: strings and bytes shorter than 64 (a one-byte length: bounds, formats,
        short partition values), arrays as one block of 1-63 items (what Java and fastavro
        write for a stats map of up to 63 columns). Data in another form fails the match and
        takes the generic path."""
        t = self.resolve(t, depth)
        if isinstance(t, list):
            if len(t) > 63:
                return None
            branches = []
            for i, b in enumerate(t):
                p = self.pattern(b, depth + 1)
                if p is None:
                    return None
                branches.append(re.escape(bytes([2 * i])) + p)
            return b"(?:" + b"|".join(branches) + b")"
        prim = t if isinstance(t, str) else t.get("type")
        if prim in ("int", "long", "enum"):
            return _VARINT
        if prim == "null":
            return b""
        if prim == "boolean":
            return b"[\x00\x01]"
        if prim in ("float", "double", "fixed"):
            size = {"float": 4, "double": 8}.get(prim) or int(t["size"])
            return b".{%d}" % size
        if prim in ("string", "bytes"):
            return _SHORT_BYTES
        if prim == "record":
            parts = [self.pattern(f["type"], depth + 1) for f in t.get("fields", ())]
            return None if any(p is None for p in parts) else b"".join(p for p in parts if p is not None)
        if prim == "array":
            item = self.pattern(t["items"], depth + 1)
            if item is None or _SHORT_BYTES in item:
                # 63 block counts times 64 lengths is a regex that takes longer to compile
                # than a manifest takes to read: bounds maps are stepped over item by item.
                return None
            blocks = b"|".join(re.escape(bytes([2 * k])) + b"(?:" + item + b"){%d}" % k for k in range(1, 64))
            return b"(?:\x00|(?:" + blocks + b")\x00)"
        return None

    def skip_run(self, types: list[Any], ind: str, depth: int) -> list[str]:
        """Lines stepping over consecutive fields of ``types``: runs of fields a regular
        expression can match go in one ``match`` call (falling back to field-by-field skipping
        when the data is not in the common form), the others field by field."""
        lines: list[str] = []
        run: list[Any] = []

        def flush_run() -> None:
            if not run:
                return
            generic = [line for t in run for line in self.skip(t, ind + "    ", depth)]
            pats = [self.pattern(t, depth) for t in run]
            prim = run[0] if isinstance(run[0], str) else None
            if len(run) == 1 and (len(generic) <= 2 or prim in ("string", "bytes")):
                # A lone varint: the loop is cheaper. A lone string (a path) is rarely short.
                lines.extend(self.skip(run[0], ind, depth))
            else:
                rx = self.const(re.compile(b"".join(p for p in pats if p is not None), re.DOTALL))
                m = self.tmp("m")
                lines.extend(
                    [
                        f"{ind}{m} = {rx}.match(buf, pos)",
                        f"{ind}if {m} is not None:",
                        f"{ind}    pos = {m}.end()",
                        f"{ind}else:",
                        *(generic or [f"{ind}    pass"]),
                    ]
                )
            run.clear()

        for t in types:
            if self.pattern(t, depth) is None:
                flush_run()
                lines.extend(self.skip(t, ind, depth))
            else:
                run.append(t)
        flush_run()
        return lines

    def _varints_only(self, t: Any, depth: int) -> int:
        """How many varints an item of type ``t`` is, if it is nothing but int/long fields."""
        t = self.resolve(t, depth)
        prim = t if isinstance(t, str) else (t.get("type") if isinstance(t, dict) else None)
        if prim in ("int", "long"):
            return 1
        if prim == "record":
            total = 0
            for f in t.get("fields", ()):
                k = self._varints_only(f["type"], depth + 1)
                if not k:
                    return 0
                total += k
            return total
        return 0


def _compile(lines: list[str], consts: Mapping[str, Any]) -> BlockDecoder:
    source = "\n".join(lines)
    scope: dict[str, Any] = {
        "_rl": read_long,
        "_zz": _ZIGZAG_14,
        "_skipv": skip_varints,
        "_items": _items,
        "_unpack": struct.unpack_from,
        "_decimal": values.decimal_from_unscaled,
        "_uuid": uuid.UUID,
        **consts,
    }
    exec(compile(source, "<firn manifest entry decoder>", "exec"), scope)
    fn: BlockDecoder = scope["decode"]
    return fn


@functools.lru_cache(maxsize=256)
def entry_decoder(
    schema_json: str, entry_ids: tuple[int, ...], file_ids: tuple[int, ...], map_ids: frozenset[int]
) -> BlockDecoder:
    """A function ``decode(buf, pos, count, out) -> pos`` appending, per entry, the tuple of the
    ``manifest_entry`` fields ``entry_ids`` then the ``data_file`` fields ``file_ids`` (None
    where the file lacks a field), skipping every other field. ``map_ids`` are data_file fields
    that are int-keyed maps (an Avro ``map`` there gets its string keys turned into ints).

    Cached by the schema text, which every manifest of one spec and writer shares."""
    try:
        schema = json.loads(schema_json)
    except ValueError as e:
        raise NotGenerated(f"schema is not JSON: {e}") from e
    if not isinstance(schema, dict) or schema.get("type") != "record":
        raise NotGenerated("top-level schema is not a record")
    gen = _Gen(named_types(schema))
    data_file_id = 2  # manifest_entry.data_file (spec "Manifest Entry Fields")
    entry_by_id = record_fields_by_id(schema, (*entry_ids, data_file_id))
    data_field = entry_by_id.get(data_file_id)
    wanted_entry = {id(entry_by_id[i]): f"e{i}" for i in entry_ids if i in entry_by_id and i != data_file_id}
    want_file = bool(file_ids)
    ind = "        "
    body: list[str] = []
    file_vars: dict[int, str] = {}
    skipped: list[Any] = []  # a run of fields to step over, stepped over together

    def flush() -> None:
        if skipped:
            body.extend(gen.skip_run(skipped, ind, 2))
            skipped.clear()

    for f in schema.get("fields", ()):
        if data_field is not None and f is data_field and want_file:
            record = gen.resolve(f["type"], 1)
            if not isinstance(record, dict) or record.get("type") != "record":
                raise NotGenerated("data_file is not a plain record")
            by_id = record_fields_by_id(record, file_ids)
            wanted = {id(by_id[i]): i for i in file_ids if i in by_id}
            for ff in record.get("fields", ()):
                fid = wanted.get(id(ff))
                if fid is None:
                    skipped.append(ff["type"])
                else:
                    flush()
                    var = f"f{fid}"
                    file_vars[fid] = var
                    body += gen.value(ff["type"], var, ind, 2, int_keys=fid in map_ids)
        elif id(f) in wanted_entry:
            flush()
            body += gen.value(f["type"], wanted_entry[id(f)], ind, 1)
        else:
            skipped.append(f["type"])
    flush()
    out_vars = [f"e{i}" if (i in entry_by_id and i != data_file_id) else "None" for i in entry_ids]
    out_vars += [file_vars.get(i, "None") for i in file_ids]
    lines = [
        "def decode(buf, pos, count, out):",
        "    append = out.append",
        "    for _ in range(count):",
        *body,
        f"        append(({', '.join(out_vars)}{',' if len(out_vars) == 1 else ''}))",
        "    return pos",
    ]
    return _compile(lines, gen.consts)


def decode_entries(data: bytes, container: Container, decoder: BlockDecoder) -> list[tuple[Any, ...]]:
    """Every entry of the file, decoded by ``decoder``; a block whose records do not end
    exactly at its end is damage."""
    out: list[tuple[Any, ...]] = []
    for block, count in blocks(data, container):
        end = decoder(block, 0, count, out)
        if end != len(block):
            raise ValueError(f"block of {count} records decoded to {end} of its {len(block)} bytes")
    return out


def field_ids_present(schema_json: str, ids_: Sequence[int]) -> frozenset[int]:
    """Which of the top-level field ids the schema has (used to tell absent from null)."""
    return frozenset(record_fields_by_id(json.loads(schema_json), ids_))


__all__ = [
    "BlockDecoder",
    "Container",
    "NotGenerated",
    "blocks",
    "decode_entries",
    "entry_decoder",
    "read_container",
    "read_long",
    "skip_varints",
]
