"""The SSE decoder against the framing rules and every way a network can split bytes."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from orchestrator.models.sse import ServerSentEvent, SSEDecoder

STREAM = (
    b": a comment, ignored\r\n"
    b"event: message_start\r\n"
    b'data: {"type":"message_start"}\r\n'
    b"\r\n"
    b"data: first line\n"
    b"data:second line\n"
    b"data:  two spaces keep one\n"
    b"id: 7\n"
    b"retry: 1500\n"
    b"\n"
    b"event: only-a-name\n"
    b"\n"
    b"data: caf\xc3\xa9 \xe2\x9c\x93\r"
    b"\r"
    b"data: [DONE]\n"
    b"\n"
)

EXPECTED = [
    ServerSentEvent(event="message_start", data='{"type":"message_start"}'),
    ServerSentEvent(data="first line\nsecond line\n two spaces keep one", id="7", retry=1500),
    # Like the last event id, the reconnection time holds for the rest of the stream.
    ServerSentEvent(data="café ✓", id="7", retry=1500),
    ServerSentEvent(data="[DONE]", id="7", retry=1500),
]


def decode(chunks: list[bytes]) -> list[ServerSentEvent]:
    decoder = SSEDecoder()
    events: list[ServerSentEvent] = []
    for chunk in chunks:
        events += decoder.feed(chunk)
    return events + decoder.close()


def test_whole_stream() -> None:
    assert decode([STREAM]) == EXPECTED


def test_every_single_split_point() -> None:
    # Splits inside CRLF, inside a UTF-8 character, inside "data:".
    for i in range(len(STREAM) + 1):
        assert decode([STREAM[:i], STREAM[i:]]) == EXPECTED, i


def test_one_byte_at_a_time() -> None:
    assert decode([STREAM[i : i + 1] for i in range(len(STREAM))]) == EXPECTED


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_any_chunking(cuts: list[int]) -> None:
    points = [0, *sorted(cuts), len(STREAM)]
    assert decode([STREAM[a:b] for a, b in itertools.pairwise(points)]) == EXPECTED


def test_bom_is_stripped_even_when_split() -> None:
    data = b"\xef\xbb\xbfdata: x\n\n"
    assert decode([data[:1], data[1:2], data[2:]]) == [ServerSentEvent(data="x")]


def test_field_without_colon_and_unknown_fields() -> None:
    assert decode([b"data\nfoo: bar\n\n"]) == [ServerSentEvent(data="")]


def test_event_without_data_is_not_dispatched_and_name_resets() -> None:
    assert decode([b"event: a\n\ndata: b\n\n"]) == [ServerSentEvent(data="b")]


def test_last_event_without_blank_line_is_dispatched_at_close() -> None:
    assert decode([b"data: x\n"]) == [ServerSentEvent(data="x")]
    assert decode([b"data: x\r"]) == [ServerSentEvent(data="x")]


def test_half_line_at_close_is_dropped() -> None:
    assert decode([b'data: complete\n\ndata: {"cut']) == [ServerSentEvent(data="complete")]


def test_id_with_nul_is_ignored() -> None:
    assert decode([b"id: a\0b\ndata: x\n\n"]) == [ServerSentEvent(data="x")]
