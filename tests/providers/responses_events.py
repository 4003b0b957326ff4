"""An OpenAI Responses event stream, built from the official SDK's own event classes
(`openai.types.responses`) and serialised with `model_dump_json()`, as a real server
sends it: each event as `event: TYPE` and `data: JSON`, numbered in order.

A `Stream` numbers the events it makes; `text`, `call` and `reasoning` are the output
items a test needs, each from its `added` event to its `done` one."""

from __future__ import annotations

from typing import Any

from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseCreatedEvent,
    ResponseErrorEvent,
    ResponseFailedEvent,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseFunctionToolCall,
    ResponseIncompleteEvent,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseReasoningItem,
    ResponseReasoningSummaryTextDeltaEvent,
    ResponseRefusalDeltaEvent,
    ResponseTextDeltaEvent,
)
from pydantic import BaseModel


def usage(
    input_tokens: int, output_tokens: int, *, cached: int = 0, reasoning: int = 0
) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": input_tokens + output_tokens,
    }


def response(status: str = "in_progress", **fields: Any) -> Response:
    return Response.model_validate(
        {
            "id": "resp_1",
            "created_at": 1700000000,
            "model": "gpt-test",
            "object": "response",
            "output": [],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "status": status,
            **fields,
        }
    )


def reasoning_item(n: int, summary: str = "") -> ResponseReasoningItem:
    parts = [{"type": "summary_text", "text": summary}] if summary else []
    return ResponseReasoningItem.model_validate(
        {
            "id": f"rs_{n}",
            "type": "reasoning",
            "summary": parts,
            "encrypted_content": f"gAAAAB-encrypted-{n}-" + "x" * 40,
        }
    )


class Stream:
    """The events of one response, numbered as the server numbers them."""

    def __init__(self) -> None:
        self.events: list[bytes] = []
        self._index = 0  # the next output item's index

    def add(self, event: BaseModel) -> Stream:
        data = event.model_dump_json()
        kind = event.type  # type: ignore[attr-defined]
        self.events.append(f"event: {kind}\ndata: {data}\n\n".encode())
        return self

    def _seq(self) -> int:
        return len(self.events)

    def created(self) -> Stream:
        return self.add(
            ResponseCreatedEvent(
                type="response.created", response=response(), sequence_number=self._seq()
            )
        )

    def _begin(self, added: Any, deltas: list[BaseModel]) -> int:
        """The item `added` and its deltas: the item's output index."""
        index = self._index
        self._index += 1
        self.add(
            ResponseOutputItemAddedEvent(
                type="response.output_item.added",
                item=added,
                output_index=index,
                sequence_number=self._seq(),
            )
        )
        for delta in deltas:
            self.add(
                delta.model_copy(update={"output_index": index, "sequence_number": self._seq()})
            )
        return index

    def _item(self, item: Any, deltas: list[BaseModel]) -> Stream:
        added = (
            item.model_copy(update={"status": "in_progress"}) if hasattr(item, "status") else item
        )
        index = self._begin(added, deltas)
        return self.add(
            ResponseOutputItemDoneEvent(
                type="response.output_item.done",
                item=item,
                output_index=index,
                sequence_number=self._seq(),
            )
        )

    def text(self, *pieces: str, refusal: bool = False) -> Stream:
        item_id = f"msg_{self._index}"
        content: dict[str, Any]
        at = {"item_id": item_id, "content_index": 0, "output_index": 0, "sequence_number": 0}
        if refusal:
            content = {"type": "refusal", "refusal": "".join(pieces)}
            deltas: list[BaseModel] = [
                ResponseRefusalDeltaEvent(type="response.refusal.delta", delta=p, **at)
                for p in pieces
            ]
        else:
            content = {"type": "output_text", "text": "".join(pieces), "annotations": []}
            deltas = [
                ResponseTextDeltaEvent(
                    type="response.output_text.delta", delta=p, logprobs=[], **at
                )
                for p in pieces
            ]
        message = ResponseOutputMessage.model_validate(
            {
                "id": item_id,
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [content],
            }
        )
        return self._item(message, deltas)

    def call(self, call_id: str, name: str, *argument_pieces: str) -> Stream:
        call = self._function_call(call_id, name, "".join(argument_pieces), "completed")
        return self._item(call, self._argument_deltas(call.id, argument_pieces))

    def cut_call(self, call_id: str, name: str, *argument_pieces: str) -> Stream:
        """A call begun and never done, as in a response cut by its output limit."""
        call = self._function_call(call_id, name, "", "in_progress")
        self._begin(call, self._argument_deltas(call.id, argument_pieces))
        return self

    def _function_call(
        self, call_id: str, name: str, arguments: str, status: Any
    ) -> ResponseFunctionToolCall:
        return ResponseFunctionToolCall(
            type="function_call",
            id=f"fc_{self._index}",
            call_id=call_id,
            name=name,
            arguments=arguments,
            status=status,
        )

    def _argument_deltas(self, item_id: str | None, pieces: tuple[str, ...]) -> list[BaseModel]:
        return [
            ResponseFunctionCallArgumentsDeltaEvent(
                type="response.function_call_arguments.delta",
                delta=p,
                item_id=item_id or "",
                output_index=0,
                sequence_number=0,
            )
            for p in pieces
        ]

    def reasoning(self, item: ResponseReasoningItem) -> Stream:
        summary = item.summary[0].text if item.summary else ""
        deltas: list[BaseModel] = [
            ResponseReasoningSummaryTextDeltaEvent(
                type="response.reasoning_summary_text.delta",
                delta=summary,
                item_id=item.id,
                output_index=0,
                summary_index=0,
                sequence_number=0,
            )
        ]
        return self._item(item, deltas if summary else [])

    def completed(self, tokens: dict[str, Any] | None = None) -> Stream:
        return self.add(
            ResponseCompletedEvent(
                type="response.completed",
                response=response("completed", usage=tokens),
                sequence_number=self._seq(),
            )
        )

    def incomplete(self, reason: str, tokens: dict[str, Any] | None = None) -> Stream:
        done = response("incomplete", usage=tokens, incomplete_details={"reason": reason})
        return self.add(
            ResponseIncompleteEvent(
                type="response.incomplete", response=done, sequence_number=self._seq()
            )
        )

    def failed(self, code: str, message: str) -> Stream:
        failed = response("failed", error={"code": code, "message": message})
        return self.add(
            ResponseFailedEvent(
                type="response.failed", response=failed, sequence_number=self._seq()
            )
        )

    def error(self, code: str | None, message: str) -> Stream:
        return self.add(
            ResponseErrorEvent(
                type="error", code=code, message=message, param=None, sequence_number=self._seq()
            )
        )
