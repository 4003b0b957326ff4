"""A background call's output keeps no secret on disk, and no read of it shows any part of
one (issue 37, item 4): the output is redacted as it comes, a secret split between two
reads of the pipe too; `read_task_output` at an offset inside a secret shows no half of
it; the file and its directory are the user's only (0600 in 0700). A real session on
disk, the scripted model, a real command."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
import trio

from orchestrator import (
    ModelRequest,
    ScriptedModel,
    ScriptedReply,
    create_session,
    drive,
    open_session,
)
from orchestrator.models.scripted import ScriptedCall
from orchestrator.redaction import Redactor, StreamRedactor
from tests.scenes import all_text, c, in_background, reply, run_settings

KEY = "tok-7f3a9c2e51d84b06aa1c"
HALF = 11  # the command prints the key's first HALF characters, then waits, then the rest
REDACTOR = Redactor.of(["SERVICE_TOKEN"], {"SERVICE_TOKEN": KEY})
MARK = "[redacted SERVICE_TOKEN]"
PIECE = 5  # no run of this many of the key's characters may be found anywhere


def pieces_of_key(text: str) -> list[str]:
    """The runs of PIECE characters of the key that `text` holds (one would join back
    with another to rebuild it)."""
    return [KEY[i : i + PIECE] for i in range(len(KEY) - PIECE + 1) if KEY[i : i + PIECE] in text]


@pytest.mark.parametrize("cut", range(1, len(KEY) + 8))
def test_a_secret_split_anywhere_between_two_pieces_is_redacted(cut: int) -> None:
    raw = f"a {KEY} b".encode()
    stream = StreamRedactor(REDACTOR)
    first = stream.feed(raw[:cut])
    assert pieces_of_key(first.decode()) == []
    out = first + stream.feed(raw[cut:]) + stream.end()
    assert out == f"a {MARK} b".encode()


def test_what_could_start_a_secret_waits_and_is_given_back_at_the_end() -> None:
    stream = StreamRedactor(REDACTOR)
    assert stream.feed(b"x tok-7f") == b"x "
    assert stream.feed(b"!") == b"tok-7f!"  # not the key after all
    assert stream.feed(b"tok") == b""
    assert stream.end() == b"tok"
    assert StreamRedactor(Redactor()).feed(b"tok-7f") == b"tok-7f"  # nothing to hide


@pytest.mark.parametrize("start", range(0, 40))
def test_a_window_that_cuts_a_secret_shows_none_of_it(start: int) -> None:
    data = f"line\nK={KEY}\nend\n".encode()
    for stop in range(start, len(data) + 1):
        shown = REDACTOR.masked(data, start, stop).decode()
        assert pieces_of_key(shown) == [], (start, stop, shown)
    whole = REDACTOR.masked(data, 0, len(data))
    assert whole == f"line\nK={MARK}\nend\n".encode()
    assert Redactor().masked(data, 3, 9) == data[3:9]


def every_read(size: int) -> list[ScriptedCall]:
    """Every window of 7 bytes of t1's output, and every read from an offset to its end."""
    reads = [c("read_task_output", task="t1", offset=o, limit=7) for o in range(size)]
    return reads + [c("read_task_output", task="t1", offset=o) for o in range(size)]


async def test_the_output_file_and_every_read_of_it_hold_no_part_of_the_key(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".env").write_text(f"{KEY}\n")
    root = tmp_path / "sessions"
    session_id, directory = create_session(root, goal="g", model="m", workspace=workspace)
    output = directory / "tasks" / "t1.output"
    # `start` and the key's first half in one write, then a pause the test ends (`go`),
    # then the rest: the key reaches the reader in two reads of the pipe.
    command = (
        f"printf 'start\\n%s' \"$(head -c {HALF} .env)\"; "
        "while [ ! -f go ]; do sleep 0.01; done; "
        f"tail -c +{HALF + 1} .env; echo end"
    )
    seen_in_pause: list[str] = []
    requests: list[str] = []

    async def first_half_read() -> ScriptedReply:
        with trio.fail_after(20):
            # Another program's progress: polled.
            while b"start" not in (output.read_bytes() if output.exists() else b""):  # noqa: ASYNC110
                await trio.sleep(0.01)
        seen_in_pause.append(output.read_bytes().decode())
        return reply("", c("write_file", path="go", content=""))

    async def brain(request: ModelRequest) -> ScriptedReply:
        text = all_text(request)
        requests.append(text + request.note)
        if request.step == 0:
            return reply("", c("shell", command=command, background=True))
        if request.step == 1:
            return await first_half_read()
        if "background call t1" not in text:
            return reply("", c("wait_tasks", tasks=["t1"]))
        if request.step < 10 and "bytes 0-" not in text:
            size = output.stat().st_size
            return reply("", *every_read(size))
        return reply("done")

    async with open_session(root, session_id, warn=lambda _: None) as live:
        await drive(
            live,
            run_settings(ScriptedModel(brain), redact=REDACTOR),
        )
    [paused] = seen_in_pause
    assert paused == "start\n"  # the first half came, and waits: it could start the key
    assert output.read_text() == f"start\n{MARK}\nend\n"
    assert stat.S_IMODE(output.stat().st_mode) == 0o600
    assert stat.S_IMODE(output.parent.stat().st_mode) == 0o700
    assert len(requests) >= 4
    assert all(pieces_of_key(text) == [] for text in requests)
    journal = (directory / "journal.jsonl").read_text()
    assert journal.count("bytes 0-7 of") == 1
    assert pieces_of_key(journal) == []


async def test_a_file_written_raw_shows_no_half_of_a_key_at_any_offset(tmp_path: Path) -> None:
    # A session's output file from before the redaction (or written raw by anything
    # else): each read redacts the secrets its window cuts.
    workspace = tmp_path / "ws"
    workspace.mkdir()
    root = tmp_path / "sessions"
    session_id, directory = create_session(root, goal="g", model="m", workspace=workspace)
    output = directory / "tasks" / "t1.output"
    raw = f"start\n{KEY}\nend\n"

    def brain(request: ModelRequest) -> ScriptedReply:
        first = in_background(request, "echo hi")
        if first is not None:
            return first
        text = all_text(request)
        if "bytes 0-" not in text:
            output.write_text(raw)
            return reply("", *every_read(len(raw)))
        assert pieces_of_key(text) == []
        return reply("done")

    async with open_session(root, session_id, warn=lambda _: None) as live:
        await drive(
            live,
            run_settings(ScriptedModel(brain), redact=REDACTOR),
        )
    journal = (directory / "journal.jsonl").read_text()
    assert journal.count("bytes 0-7 of") == 1
    assert "redacted SERVICE_TOKEN" in journal
    assert pieces_of_key(journal) == []
