"""What keeping secrets out of the record costs per event (state/scrub.py).

    .venv/bin/python tests/benchmarks/bench_scrub.py [--secrets N] [--rounds N]

For the two events every round has (a reply with a tool call, the call's result), prints
the time `scrubbed` takes with N secrets configured and none found (every round's case),
with one found (a copy is made), and each next to the raw msgspec encoding of the same
event, which the journal does anyway: the ratio is what scrubbing adds to it, measured in
the same run. Not a test (pytest does not collect `bench_*.py`).
"""

from __future__ import annotations

import argparse
import time

import msgspec

from orchestrator.messages import AssistantMessage, ToolCall, ToolResult
from orchestrator.redaction import Redactor
from orchestrator.state.events import AssistantReplied, Event, ToolCallFinished
from orchestrator.state.scrub import scrubbed


def per_call(fn: object, rounds: int) -> float:
    assert callable(fn)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(rounds):
            fn()
        best = min(best, (time.perf_counter() - start) / rounds)
    return best


def events(secret: str) -> dict[str, Event]:
    text = "The fixture closes the file before the reader is done; I will fix it. " * 9
    call = ToolCall(id="call_1", name="shell", arguments='{"command": "pytest -q tests/io"}')
    output = "tests/io/test_reader.py::test_reads_all PASSED\n" * 80
    return {
        "reply": AssistantReplied(
            agent="main", message=AssistantMessage(text=text, tool_calls=(call,)), model="m"
        ),
        "result": ToolCallFinished(
            agent="main",
            ref="r1",
            result=ToolResult(call_id="call_1", name="shell", status="ok", content=output),
        ),
        "result with a secret": ToolCallFinished(
            agent="main",
            ref="r2",
            result=ToolResult(call_id="call_2", name="shell", status="ok", content=output + secret),
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--secrets", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=20_000)
    args = parser.parse_args()
    environ = {f"SECRET_{i}": f"sk-{i:04d}-abcdefghijklmnopqrstuvwx" for i in range(args.secrets)}
    redactor = Redactor.of(environ, environ)
    print(f"{args.secrets} secrets configured; best of 5 x {args.rounds} calls")
    for name, event in events(environ.get("SECRET_0", "")).items():
        scrub = per_call(lambda event=event: scrubbed(event, redactor), args.rounds)
        encode = per_call(lambda event=event: msgspec.json.encode(event), args.rounds)
        size = len(msgspec.json.encode(event))
        print(
            f"{name:22} {size:6} B  scrub {scrub * 1e6:7.1f} us  encode {encode * 1e6:6.1f} us"
            f"  scrub/encode {scrub / encode:5.2f}"
        )


if __name__ == "__main__":
    main()
