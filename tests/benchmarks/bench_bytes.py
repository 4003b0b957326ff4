"""What a request costs in bytes (issue 39, item 1): T1 on the wire against pydantic-ai's,
and the demo's requests by role.

    .venv-peers/bin/python tests/benchmarks/bench_bytes.py [--tree DIR]

T1: one agent with one custom tool, `lookup(key) -> str`; the model calls `lookup` once,
then answers. Each way runs T1 against one OpenAI-compatible server on 127.0.0.1 (started
here, it answers as a provider would: streamed or not, as asked), which keeps the body of
every request it gets:

    plain          `orc.run(goal, model="openai:...", tools=[lookup])`: what is given
    with a team    the same with the workspace tools and the built-in agent types given
                   (`tools=[*orc.workspace_tools(), lookup], agents=orc.builtin_agents()`),
                   which is what a plain run sent before issue 39
    pydantic-ai    `Agent(OpenAIChatModel(...), tools=[lookup]).run(goal)` (with `make
                   peers`; skipped, and said so, without it)

For each: the requests, the tools each sent, the bytes of the first request's body and
the mean over the run's, and the ratio of ours to pydantic-ai's inside this one run.

The demo: `orchestrator demo` run to its end, each model request the scripted model gets
encoded as the OpenAI adapter would send it (`models/openai.py` `to_wire`); the mean bytes
and tools per request of each role. `--tree DIR` prints the same for another checkout (say
the commit before, made with `git worktree add DIR COMMIT`), in a child process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bench_call import ANSWER, GOAL, lookup  # T1's goal, tool and answer (this folder's)

# --- an OpenAI-compatible server on loopback ------------------------------------------


class _Provider(BaseHTTPRequestHandler):
    bodies: list[bytes]  # set per server

    def log_message(self, format: str, *args: Any) -> None:  # (quiet)
        return

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        self.bodies.append(body)
        request = json.loads(body)
        answered = any(m.get("role") == "tool" for m in request["messages"])
        message: dict[str, Any] = (
            {"role": "assistant", "content": ANSWER}
            if answered
            else {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "lookup", "arguments": '{"key": "k"}'},
                    }
                ],
            }
        )
        usage = {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}
        reason = "stop" if answered else "tool_calls"
        if request.get("stream"):
            delta = dict(message)
            if "tool_calls" in delta:
                delta["tool_calls"] = [{"index": 0, **delta["tool_calls"][0]}]
            chunks = [
                {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
                 "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
                 "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]},
                {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
                 "choices": [], "usage": usage},
            ]  # fmt: skip
            data = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
            data += b"data: [DONE]\n\n"
            kind = "text/event-stream"
        else:
            data = json.dumps(
                {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                 "choices": [{"index": 0, "message": message, "finish_reason": reason}],
                 "usage": usage}
            ).encode()  # fmt: skip
            kind = "application/json"
        self.send_response(200)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def provider() -> Iterator[tuple[str, list[bytes]]]:
    """(the base URL, the bodies received) of a server on 127.0.0.1, for the block."""
    bodies: list[bytes] = []
    handler = type("Handler", (_Provider,), {"bodies": bodies})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", bodies
    finally:
        server.shutdown()
        server.server_close()


# --- T1 three ways ----------------------------------------------------------------------


def ours(url: str, *, team: bool, sessions: str) -> str:
    import trio

    import orchestrator as orc

    tools: list[Any] = [orc.tool(read_only=True)(lookup)]
    extra: dict[str, Any] = {}
    if team:
        tools = [*orc.workspace_tools(), *tools]
        extra["agents"] = orc.builtin_agents()

    async def main() -> orc.RunResult:
        return await orc.run(
            GOAL,
            model=f"openai:gpt-4.1@{url}",
            tools=tools,
            sessions_dir=sessions,
            workspace=sessions,
            **extra,
        )

    return trio.run(main).output


def peer(url: str) -> str:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel("gpt-4.1", provider=OpenAIProvider(base_url=url, api_key="x"))
    agent = Agent(model, tools=[lookup])
    return asyncio.run(agent.run(GOAL)).output


def measured(way: str, bodies: list[bytes]) -> dict[str, Any]:
    tools = [len(json.loads(b).get("tools", [])) for b in bodies]
    sizes = [len(b) for b in bodies]
    return {
        "way": way,
        "requests": len(bodies),
        "tools": tools[0] if tools else 0,
        "first": sizes[0] if sizes else 0,
        "mean": statistics.mean(sizes) if sizes else 0.0,
    }


def t1() -> list[dict[str, Any]]:
    rows = []
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench")
    with tempfile.TemporaryDirectory() as sessions:
        for way, team in (("plain", False), ("with a team", True)):
            with provider() as (url, bodies):
                answer = ours(url, team=team, sessions=sessions)
            assert answer == ANSWER, answer
            rows.append(measured(way, bodies))
    try:
        import pydantic_ai  # noqa: F401
    except ImportError:
        print("pydantic-ai: not installed, skipped (make peers, then run with .venv-peers)")
        return rows
    with provider() as (url, bodies):
        assert peer(url) == ANSWER
    rows.append(measured("pydantic-ai", bodies))
    return rows


# --- the demo's requests by role ---------------------------------------------------------


def demo_roles() -> dict[str, dict[str, float]]:
    """Run the demo here; the mean bytes and tools of each role's requests."""
    import orjson

    from orchestrator.cli import main as cli
    from orchestrator.models import scripted
    from orchestrator.models.openai import to_wire

    seen: dict[str, list[tuple[int, int]]] = defaultdict(list)
    stream = scripted.ScriptedModel.stream

    def counting(self: Any, request: Any) -> Any:
        body = to_wire(request, model="gpt-4.1")
        seen[request.role].append((len(orjson.dumps(body)), len(body.get("tools", []))))
        return stream(self, request)

    scripted.ScriptedModel.stream = counting  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as scratch:
        args = ["demo", "--no-crash", "--json", "--sessions-dir", scratch, "-w", f"{scratch}/w"]
        with open(os.devnull, "w") as quiet, redirect_stdout(quiet), redirect_stderr(quiet):
            code = cli(args)
    assert code == 0, code
    return {
        role: {
            "requests": len(pairs),
            "bytes": statistics.mean(b for b, _ in pairs),
            "tools": statistics.mean(t for _, t in pairs),
        }
        for role, pairs in sorted(seen.items())
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", help="another checkout, whose demo is measured too")
    parser.add_argument("--demo-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.demo_only:  # (the child of --tree)
        print(json.dumps(demo_roles()))
        return
    rows = t1()
    theirs = next((r for r in rows if r["way"] == "pydantic-ai"), None)
    print("T1 on the wire (one lookup, then the answer)")
    print(f"{'way':<14} {'requests':>8} {'tools':>6} {'first B':>8} {'mean B':>8} {'÷ peer':>7}")
    for row in rows:
        ratio = f"{row['mean'] / theirs['mean']:.2f}" if theirs else "-"
        print(
            f"{row['way']:<14} {row['requests']:>8} {row['tools']:>6} {row['first']:>8} "
            f"{row['mean']:>8.0f} {ratio:>7}"
        )
    trees = {"this checkout": None, **({args.tree: args.tree} if args.tree else {})}
    print("\nThe demo's requests by role (OpenAI wire form)")
    print(f"{'tree':<16} {'role':<10} {'requests':>8} {'tools':>6} {'mean B':>8}")
    for name, tree in trees.items():
        roles = demo_roles() if tree is None else _child(tree)
        for role, row in roles.items():
            print(
                f"{name[-16:]:<16} {role:<10} {row['requests']:>8} {row['tools']:>6.1f} "
                f"{row['bytes']:>8.0f}"
            )


def _child(tree: str) -> dict[str, dict[str, float]]:
    env = {**os.environ, "PYTHONPATH": tree}
    done = subprocess.run(
        [sys.executable, __file__, "--demo-only"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=tree,
    )
    result: dict[str, dict[str, float]] = json.loads(done.stdout.splitlines()[-1])
    return result


if __name__ == "__main__":
    main()
