"""The record types keep their annotations as objects (their modules have no `from
__future__ import annotations`): building a decoder (a resume's, `sessions show`'s) then
evaluates no strings. With them as strings, msgspec compiled and evaluated every one of
the 75 record types' annotations: 5.3 ms of a process's first decodes, 1.5 ms without
(docs/performance.md)."""

from __future__ import annotations

import typing

import msgspec

from orchestrator.session.history import Read
from orchestrator.state.events import Record
from orchestrator.state.manifest import Manifest
from orchestrator.state.snapshot import Snapshot


def _structs(*roots: object) -> set[type[msgspec.Struct]]:
    found: set[type[msgspec.Struct]] = set()

    def walk(kind: object) -> None:
        for argument in typing.get_args(kind):
            walk(argument)
        if isinstance(kind, type) and issubclass(kind, msgspec.Struct) and kind not in found:
            found.add(kind)
            for hint in typing.get_type_hints(kind).values():
                walk(hint)

    for root in roots:
        walk(root)
    return found


def test_every_journaled_or_snapshotted_type_has_its_annotations_as_objects() -> None:
    structs = _structs(Record, Snapshot, Manifest, Read)
    assert len(structs) >= 75
    strings = [
        f"{kind.__module__}.{kind.__qualname__}.{name}"
        for struct in structs
        for kind in struct.__mro__
        for name, annotation in vars(kind).get("__annotations__", {}).items()
        if isinstance(annotation, str)
    ]
    assert strings == []


def test_typings_hints_are_typing_extensions_for_every_record_type() -> None:
    # The CLI imports msgspec with typing_extensions marked absent (cli/main.py), so
    # msgspec reads the record types' hints with `typing.get_type_hints`: it must read
    # what typing_extensions' would (on Python 3.11 and later they agree).
    import typing_extensions

    for struct in _structs(Record, Snapshot, Manifest, Read):
        assert typing.get_type_hints(struct, include_extras=True) == (
            typing_extensions.get_type_hints(struct, include_extras=True)
        ), struct
