"""`read_task_output`: the output of a call running in the background (a task of kind
`tool`, team/background.py), read so far, from an offset: a build's log while it
builds, a server's while it serves."""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.tools.base import Tool, ToolContext, ToolOutput

READ_LIMIT = 16_000  # bytes of output one call reads at most


class OutputReader(Protocol):
    def read(self, agent: str, task_id: str, offset: int, limit: int) -> ToolOutput: ...


class ReadTaskOutputArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task: str = Field(description="The task id of one of your calls in the background.")
    offset: int = Field(
        default=0, ge=0, description="The byte to start from (the last read says where to go on)."
    )
    limit: int = Field(
        default=READ_LIMIT, gt=0, le=READ_LIMIT, description="Bytes to read at most."
    )


class ReadTaskOutput(Tool[ReadTaskOutputArgs]):
    name = "read_task_output"
    description = (
        "Read the output of one of your calls running in the background (or ended), from "
        "a byte offset: its state, the bytes read and where to go on."
    )
    args_model = ReadTaskOutputArgs
    read_only = True
    idempotent = True
    approval = False

    def __init__(self, reader: OutputReader) -> None:
        self.reader = reader

    async def run(self, args: ReadTaskOutputArgs, ctx: ToolContext) -> ToolOutput:
        return self.reader.read(ctx.agent, args.task, args.offset, args.limit)
