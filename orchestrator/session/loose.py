"""git's loose objects, written and read without running git: what lets a checkpoint of
a path a file tool wrote cost a blob and the trees above it, in-process
(session/picture.py), instead of two git processes each reading and writing the index.

A loose object is the zlib of `<kind> <size>\\0<bytes>`, stored under
`objects/<first two hex digits>/<the other 38>` of its sha1, which is its id. A tree's
bytes are its entries, each `<mode in octal> <name>\\0<the entry's 20-byte id>`, sorted by
name as git sorts them: a tree's name as if it ended in `/`. Objects are only ever added:
one that is there already is not written again (same id, same bytes).
"""

from __future__ import annotations

import hashlib
import os
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path

TREE = b"40000"
FILE = b"100644"
EXECUTABLE = b"100755"
LINK = b"120000"

Entries = dict[bytes, tuple[bytes, bytes]]
"""A tree's entries: name -> (mode, binary id)."""


def object_id(kind: bytes, data: bytes) -> bytes:
    digest = hashlib.sha1(b"%s %d\0" % (kind, len(data)), usedforsecurity=False)
    digest.update(data)
    return digest.digest()


def write_object(
    objects: Path, kind: bytes, data: bytes, level: int = 1, oid: bytes | None = None
) -> bytes:
    """Store `data` as a loose object of `kind` under `objects` (zlib at `level`, the
    store's `core.looseCompression`) unless it is there; its binary id (`oid`, when the
    caller has it already: `object_id(kind, data)`)."""
    oid = oid or object_id(kind, data)
    name = oid.hex()
    target = objects / name[:2] / name[2:]
    if target.exists():
        return oid
    target.parent.mkdir(exist_ok=True)
    packer = zlib.compressobj(level)
    body = packer.compress(b"%s %d\0" % (kind, len(data))) + packer.compress(data)
    body += packer.flush()
    # Written aside and renamed into place, read-only as git makes them: a reader (git,
    # or another writer of the same object) never sees a half-written one.
    temporary = target.parent / f"tmp_obj_{os.getpid()}_{os.urandom(4).hex()}"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444)
    try:
        view = memoryview(body)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    os.replace(temporary, target)
    return oid


def read_tree(objects: Sequence[Path], oid: bytes) -> Entries | None:
    """The entries of tree `oid`, read from the first of `objects` holding it loose; None
    when none does (packed, or missing: the caller asks git instead)."""
    name = oid.hex()
    for directory in objects:
        try:
            raw = zlib.decompress((directory / name[:2] / name[2:]).read_bytes())
        except FileNotFoundError:
            continue
        header, _, data = raw.partition(b"\0")
        if not header.startswith(b"tree "):
            return None
        return parse_tree(data)
    return None


def parse_tree(data: bytes) -> Entries:
    entries: Entries = {}
    at = 0
    while at < len(data):
        space = data.index(b" ", at)
        nul = data.index(b"\0", space)
        entries[data[space + 1 : nul]] = (data[at:space], data[nul + 1 : nul + 21])
        at = nul + 21
    return entries


def tree_bytes(entries: Mapping[bytes, tuple[bytes, bytes]]) -> bytes:
    """A tree's bytes, its entries in git's order."""
    ordered = sorted(
        entries.items(), key=lambda item: item[0] + b"/" if item[1][0] == TREE else item[0]
    )
    return b"".join(mode + b" " + name + b"\0" + oid for name, (mode, oid) in ordered)
