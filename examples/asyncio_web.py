"""The library from asyncio: a small web service on the standard library alone (no web
framework) whose handler awaits `orc.run` on asyncio's loop. `POST /run` with a goal as
the body runs a session and answers with its result as JSON; events print as they come,
on the service's own thread. Walkthrough: docs/library.md, "From asyncio".

By default it starts on a free port, sends itself two requests at once, prints the
answers and stops. `--serve PORT` keeps serving (try `curl -d 'say hello' localhost:PORT/run`).
Offline (a scripted model) unless `--model SPEC`.

Run: .venv/bin/python examples/asyncio_web.py [--serve PORT] [--model SPEC]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import threading

import orchestrator as orc

SESSIONS = tempfile.mkdtemp()
MAIN_THREAD = threading.get_ident()


def show(event: orc.Event) -> None:
    if isinstance(event, orc.AssistantReplied) and event.message.text:
        where = "the loop's thread" if threading.get_ident() == MAIN_THREAD else "elsewhere"
        print(f"  [{event.agent}] said {event.message.text!r} (seen on {where})")


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """One HTTP/1.1 request: POST /run with the goal as the body."""
    request_line = (await reader.readline()).decode()
    headers: dict[str, str] = {}
    while (line := (await reader.readline()).decode().strip()) != "":
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    if not request_line.startswith("POST /run "):
        status, answer = "404 Not Found", {"error": "POST /run with a goal as the body"}
    else:
        result = await orc.run(
            body.decode(),
            model=MODEL,
            workspace=tempfile.mkdtemp(),
            sessions_dir=SESSIONS,
            on_event=show,
        )
        status = "200 OK"
        answer = {"status": result.status, "output": result.output, "session": result.session_id}
    payload = json.dumps(answer).encode()
    writer.write(
        f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(payload)}\r\nconnection: close\r\n\r\n".encode()
        + payload
    )
    await writer.drain()
    writer.close()


async def ask(port: int, goal: str) -> str:
    """A client: POST the goal, return the response's body."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    body = goal.encode()
    writer.write(
        f"POST /run HTTP/1.1\r\nhost: localhost\r\ncontent-length: {len(body)}\r\n\r\n".encode()
        + body
    )
    await writer.drain()
    response = await reader.read()
    writer.close()
    return response.decode().partition("\r\n\r\n")[2]


async def main(serve: int | None) -> None:
    server = await asyncio.start_server(handle, "127.0.0.1", serve or 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        if serve is not None:
            print(f"serving on http://127.0.0.1:{port}/run")
            await server.serve_forever()
        answers = await asyncio.gather(ask(port, "say hello"), ask(port, "say goodbye"))
        for answer in answers:
            print(answer)


# --- the offline model: answers every model call from the goal --------------------------


def offline(request: orc.ModelRequest) -> orc.ScriptedReply:
    goal = request.messages[0].content  # "say hello" (a plain agent has no system prompt)
    return orc.ScriptedReply(text=goal.removeprefix("say ").capitalize() + ".")


MODEL: orc.Model | str = orc.ScriptedModel(offline)

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", type=int, metavar="PORT", help="keep serving on PORT")
    parser.add_argument("--model", help="a model spec (default: the offline model)")
    args = parser.parse_args()
    MODEL = args.model or MODEL
    asyncio.run(main(args.serve))
