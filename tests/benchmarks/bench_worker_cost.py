"""What a task on a worker costs (issue 44, item 1), before and after a change: W3 (N
subagents x 5 rounds, 50 ms a model call) with its subagents on one worker, next to the
same session with them in its own process (`local`), on SQLite and on Postgres, each
tree's runs alternating (A B A B) in one run of this script, so both see the same load.

    .venv/bin/python tests/benchmarks/bench_worker_cost.py [--before DIR] [--tasks 200]
        [--runs 2] [--latency 0.05] [--no-postgres]

`--before DIR`: a tree of the package to compare (`git archive COMMIT | tar -x -C DIR`),
run with this tree's virtual environment; each configuration runs in a process of its
own whose working directory is its tree, so that the session and its worker import that
tree's package. The worker runs with its CPU metered (the CPU of DBOS's own threads, and
the thread CPU of the engine's database calls, summed at its exit; `METER` below).

Per task, in ms of CPU: `worker`, the worker process's over the session (its start
apart); `dbos`, DBOS's own Python in it (its threads whole: its workflows', its queues'
dequeue and the start of what they dequeued, its notifier; with their idle polls
before and after the session, a few ms in all); `db`, the engine's own database calls
(`Store`: the task's journal read and written, its run); `loop`, the same task's cost
in the session's process on `local` (its loop, its delegation and its completion); and
`ours`, what the worker costs beyond the two: `worker - dbos - loop`. The session's CPU
per task on a worker is printed beside it (following its task: engine/remote.py).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 5

METER = """
import functools, json, os, threading, time
_spent, _lock = {}, threading.Lock()
def _wrap(owner, name, label):
    fn = getattr(owner, name)
    @functools.wraps(fn)
    def metered(*args, **kwargs):
        start = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            with _lock:
                _spent[label] = _spent.get(label, 0.0) + time.thread_time() - start
    setattr(owner, name, metered)
from dbos import _dbos
from orchestrator.engine import store
_wrap(_dbos.DBOS, "send", "dbos")  # (called from the worker's own threads)
# The CPU of DBOS's own threads, whole: its workflows' (`dbos-executor-*`), its queues'
# (`queue-worker-*`: the dequeue, the dequeued workflows' statuses read and their start),
# and those running a function of DBOS's (its queue thread, its notifier).
def _dbos_threads():
    total = 0.0
    for thread in threading.enumerate():
        target = getattr(thread, "_target", None)
        own = thread.name.startswith(("queue-worker-", "dbos-"))
        if own or getattr(target, "__module__", "").startswith("dbos"):
            try:
                total += time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
            except (OSError, TypeError):
                pass
    return total
_calls = ("append", "append_all", "records", "records_of", "run", "cancelled", "mailed")
_runs = "runs_to_take" if hasattr(store.Store, "runs_to_take") else "run_to_take"
for name in (*_calls, _runs, "session_tail"):
    if hasattr(store.Store, name):
        _wrap(store.Store, name, "db")
_destroy = _dbos.DBOS.destroy
def _destroying(*args, **kwargs):  # (its threads' CPU read before they are joined)
    with _lock:
        _spent["dbos"] = _spent.get("dbos", 0.0) + _dbos_threads()
    return _destroy(*args, **kwargs)
_dbos.DBOS.destroy = _destroying
_exit = os._exit
def _dump(code):
    with open(os.environ["METER_OUT"] + "." + str(os.getpid()), "w") as out:
        json.dump(_spent, out)
    _exit(code)
os._exit = _dump
"""


def one(url: str, tasks: int, latency: float, out: Path) -> dict[str, float]:
    """In this process (its tree's package): W3 on `local`, then on one metered worker."""
    import trio

    from tests.benchmarks import bench_engine, engine_workers
    from tests.engine import workers

    os.environ["METER_OUT"] = str(out)
    engine_workers.start_worker = functools.partial(workers.start_worker, before=METER)
    figures: dict[str, float] = {}
    for count in (0, 1):
        root = Path(tempfile.mkdtemp(prefix="bench-cost-"))
        work = bench_engine.Work(tasks, rounds=ROUNDS, latency=latency, files=True)
        try:
            run = functools.partial(
                engine_workers.w3_session,
                root,
                url,
                count,
                work,
                tasks=tasks,
                rounds=ROUNDS,
                latency=latency,
                concurrency=tasks,
            )
            _, worker_cpu = trio.run(run)
        finally:
            shutil.rmtree(root)
        (first, first_cpu), (last, last_cpu) = work.marks
        kind = "workers" if count else "local"
        figures[f"{kind}_wall"] = last - first
        figures[f"{kind}_session"] = (last_cpu - first_cpu) / tasks * 1000
        if count:
            figures["worker"] = worker_cpu / tasks * 1000
    (metered,) = out.parent.glob(f"{out.name}.*")
    for label, seconds in json.loads(metered.read_text()).items():
        figures[label] = seconds / tasks * 1000
    return figures


def _made(url: str) -> str:
    """`url`, its Postgres database made first (a worker waits for one that is missing)."""
    import sqlalchemy as sa

    if url.startswith("postgresql"):
        base, name = url.rsplit("/", 1)
        server = sa.create_engine(f"{base}/postgres", isolation_level="AUTOCOMMIT")
        try:
            with server.connect() as db:
                db.execute(sa.text(f'CREATE DATABASE "{name}"'))
        finally:
            server.dispose()
    return url


def _child(tree: Path, url: str, tasks: int, latency: float) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as scratch:
        command = [sys.executable, __file__, "--one", url, str(tasks), str(latency), scratch]
        env = {**os.environ, "PYTHONPATH": str(tree)}
        done = subprocess.run(
            command, cwd=tree, env=env, capture_output=True, text=True, check=False
        )
    if done.returncode:
        sys.exit(f"{tree} on {url}: exit {done.returncode}\n{done.stdout}{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> None:
    if argv is None and sys.argv[1:2] == ["--one"]:
        url, tasks, latency, scratch = sys.argv[2:6]
        sys.path.insert(0, os.getcwd())
        found = one(_made(url), int(tasks), float(latency), Path(scratch) / "meter")
        print(json.dumps(found))
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--before", type=Path, help="a tree to compare with this one")
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--runs", type=int, default=2, help="A B runs of each (2)")
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from tests.engine import postgres

    trees = [*([args.before.resolve()] if args.before else []), ROOT]
    print(
        f"W3 on one worker: {args.tasks} tasks x {ROUNDS} rounds, {args.latency * 1000:g} ms "
        f"a model call; load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    reason = "--no-postgres" if args.no_postgres else postgres.missing()
    with tempfile.TemporaryDirectory() as scratch, _server(reason) as server:
        databases = {"sqlite": f"sqlite:///{scratch}/engine"}
        if server:
            databases["postgres"] = server.rsplit("/", 1)[0] + "/cost"
        found: dict[tuple[str, str], list[dict[str, float]]] = {}
        made = 0
        for _ in range(args.runs):
            for name, url in databases.items():
                for tree in trees:
                    made += 1  # (a database of its own each)
                    own = f"{url}{made}.sqlite" if name == "sqlite" else f"{url}{made}"
                    figures = _child(tree, own, args.tasks, args.latency)
                    found.setdefault((name, str(tree)), []).append(figures)
                    print(f"  {name:<8} {_label(tree, trees)}: {_line(figures)}", flush=True)
    print("medians:")
    for (name, tree), runs in found.items():
        median = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(f"  {name:<8} {_label(Path(tree), trees)}: {_line(median)}")
    print(f"load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


def _label(tree: Path, trees: list[Path]) -> str:
    return "after " if len(trees) > 1 and tree == ROOT else "before" if len(trees) > 1 else "this"


def _line(f: dict[str, float]) -> str:
    ours = f["worker"] - f.get("dbos", 0.0) - f["local_session"]
    return (
        f"W3 {f['workers_wall']:.2f} s on 1 worker, {f['local_wall']:.2f} s local "
        f"({f['workers_wall'] / f['local_wall']:.1f}x); ms of CPU a task: worker "
        f"{f['worker']:.1f} (dbos {f.get('dbos', 0.0):.1f}, db {f.get('db', 0.0):.1f}), "
        f"loop {f['local_session']:.1f}, ours {ours:.1f}; session {f['workers_session']:.1f}"
    )


def _server(reason: str | None) -> Any:
    from contextlib import nullcontext

    from tests.engine import postgres

    if reason is not None:
        print(f"postgres: skipped ({reason})")
        return nullcontext("")
    return postgres.server(durable=True)


if __name__ == "__main__":
    main()
