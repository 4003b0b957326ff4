"""The engine's own tables (engine/store.py): made by whichever process comes first."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

pytest.importorskip("dbos")

from orchestrator.engine import sqlite_url
from orchestrator.engine.store import Store


def test_processes_making_the_tables_at_once_all_get_them(tmp_path: Path) -> None:
    # A session and its workers start on a new database at once: each store looks for
    # the tables, then makes them, and the second to make one finds it there already.
    for attempt in range(8):
        url = sqlite_url(tmp_path / f"engine{attempt}.sqlite")
        stores = [Store(url) for _ in range(6)]
        start = threading.Barrier(len(stores))
        failed: list[BaseException] = []

        def first_use(store: Store, start: threading.Barrier, failed: list[BaseException]) -> None:
            start.wait()
            try:
                store.session_tail("s", {})
            except BaseException as exc:
                failed.append(exc)

        threads = [threading.Thread(target=first_use, args=(s, start, failed)) for s in stores]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for store in stores:
            store.close()
        assert not failed, failed[0]
