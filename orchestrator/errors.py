"""The library's exceptions: one small tree, each class something a caller can act on.

Ordinary outcomes (a task blocked, a budget spent, a tool that failed) are return
values, not exceptions.
"""

from __future__ import annotations

import functools
import re
from datetime import datetime
from pathlib import Path


class OrchestratorError(Exception):
    """Base of every error this library raises on purpose."""


def bare(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one exception a nursery (or nested nurseries) grouped, as a caller expects it
    (a `ConfigError`, a `JournalCorrupt`, ...); the group itself when it holds several."""
    error: BaseException = group
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


class ConfigError(OrchestratorError):
    """Bad configuration or command-line input: the message says what to pass instead."""


# --- models -----------------------------------------------------------------------------


class ModelError(OrchestratorError):
    """A model call failed. `provider` names the adapter ("openai", "anthropic", ...);
    `status` is the HTTP status the provider answered (None: none, as for a dropped
    connection or an error told in the stream) and `tags` the error body's `type` and
    `code`, lower-cased (models/failures.py `classify` sets both)."""

    retryable: bool = False
    status: int | None = None
    tags: frozenset[str] = frozenset()

    def __init__(self, message: str, *, provider: str = "") -> None:
        super().__init__(message)
        self.provider = provider
        self.message = message


class ProviderRateLimited(ModelError):
    """429 (or a provider's 'overloaded'): wait `retry_after` seconds if given, then retry."""

    retryable = True

    def __init__(
        self, message: str, *, provider: str = "", retry_after: float | None = None
    ) -> None:
        super().__init__(message, provider=provider)
        self.retry_after = retry_after


class ProviderTransient(ModelError):
    """A 5xx, a dropped connection or a timeout: worth retrying."""

    retryable = True

    def __init__(
        self, message: str, *, provider: str = "", retry_after: float | None = None
    ) -> None:
        super().__init__(message, provider=provider)
        self.retry_after = retry_after


class ContextTooLong(ModelError):
    """The request does not fit the model's context window: compact, then retry.

    `limit` is the window the provider stated and `requested` the request's input in
    tokens as the provider counted it (the completion it asked for left out); each is
    None where the provider did not say. `stated` reads both from a provider's message.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        limit: int | None = None,
        requested: int | None = None,
    ) -> None:
        super().__init__(message, provider=provider)
        self.limit = limit
        self.requested = requested

    @staticmethod
    def stated(message: str) -> tuple[int | None, int | None]:
        """(limit, requested) as a context-too-long message words them, in the wordings
        of OpenAI, Anthropic, vLLM, llama.cpp, Ollama, LM Studio, OpenRouter, Together,
        Mistral, DeepSeek, Gemini, xAI and Cerebras (tests/providers/test_context_errors.py
        holds each one's real text); None for a figure the message does not state."""
        text = " ".join(message.lower().split())
        return _first(_patterns(_LIMITS), text), _requested(text)


class CompactionFailed(ContextTooLong):
    """Even a compacted context does not fit the model's window (the summary, the anchors
    and the system prompt alone are too long): the agent cannot go on with this model."""

    retryable = False


class NothingToCompact(OrchestratorError, ValueError):
    """A compaction asked for by hand of a context that is all last turns, with no old
    output to prune: a summary would only add to it."""


class ProviderAuthError(ModelError):
    """The API key is missing, wrong or not allowed to use this model."""


class ProviderBadRequest(ModelError):
    """The provider refused the request as malformed; the message is the provider's own."""


class ProviderFatal(ModelError):
    """Anything else the provider reported that retrying will not fix."""


class ScriptError(ModelError):
    """A scripted model ran out of replies or holds a malformed one."""


# --- workspace and tools ----------------------------------------------------------------


class WorkspaceEscape(OrchestratorError):
    """A path resolves outside the workspace root (`..`, an absolute path, a symlink)."""


class ScopeEscape(WorkspaceEscape):
    """A path a task may not write: it resolves outside the task's write scope. `resolved`
    is where it leads when it was written inside the scope (a symlink, or `..`), else ""."""

    def __init__(self, message: str, *, written: str, resolved: str) -> None:
        super().__init__(message)
        self.written = written
        self.resolved = resolved


class ToolFailed(OrchestratorError):
    """Raised by a tool for an expected failure; the model sees the message as an error result."""


class ToolInterrupted(OrchestratorError):
    """Raised when a tool's call was stopped from outside it (an asyncio host's loop
    cancelled the coroutine it ran): the call ends `interrupted`, which the model reads as
    "may or may not have taken effect"."""


class HostCallbackFailed(OrchestratorError):
    """A callback of the host program (its `answer` to a subagent's question) raised: not a
    tool's failure for the model to read, but the program's, which stops the agent asking
    (the main agent: the run; a subagent: its task, `crashed`). `__cause__` is what it
    raised."""


class RecallRefused(OrchestratorError, ValueError):
    """A `recall` ref that names nothing the agent may read back: malformed, beyond the
    journal, another agent's record, a call its reply does not have or that has no result
    yet. The message says which, for the model to read (the `recall` tool's error result)."""


# --- sessions ---------------------------------------------------------------------------


class SessionError(OrchestratorError):
    """Base for session store problems."""


class InvalidSessionId(SessionError):
    """A session id that is not one of ours (`../x`, `a/b`, empty); `value` is what was given."""

    def __init__(self, message: str, *, value: object = None) -> None:
        super().__init__(message)
        self.value = value


class SessionNotFound(SessionError):
    """No session with that id under the sessions root."""


class SessionLocked(SessionError):
    """Another live process holds the session's lock.

    `pid`, `host` and `since` name the holder when its lock file says who it is (a holder
    that has just taken the lock may not have written them yet)."""

    def __init__(
        self,
        message: str,
        *,
        path: Path | None = None,
        pid: int | None = None,
        host: str | None = None,
        since: datetime | None = None,
    ) -> None:
        super().__init__(message)
        self.path = path
        self.pid = pid
        self.host = host
        self.since = since


class StorageFailed(SessionError):
    """Writing the session's files failed (a full disk, a quota, a read-only or failing
    file system). `path` is the file that could not be written, `cause` the `OSError`,
    and `kept_seq` the journal's last record known to be on disk (None when the failure
    was not the journal's): everything up to it is kept, and the session resumes from it
    once the disk takes writes again."""

    def __init__(
        self, message: str, *, path: Path, cause: OSError, kept_seq: int | None = None
    ) -> None:
        super().__init__(message)
        self.path = path
        self.cause = cause
        self.kept_seq = kept_seq


class JournalCorrupt(SessionError):
    """A journal record other than the last one fails its checksum or does not parse.

    `path`, `line` (1-based) and `seq` (the record's, or the one expected there) locate it
    when the store raised it."""

    def __init__(
        self,
        message: str,
        *,
        path: Path | None = None,
        line: int | None = None,
        seq: int | None = None,
    ) -> None:
        super().__init__(message)
        self.path = path
        self.line = line
        self.seq = seq


# --- what a context-too-long message states (ContextTooLong.stated) ---------------------

_N = r"(\d(?:[\d,]*\d)?)"  # 8192, 32,768, 1,048,576

# The wordings are compiled on the first message read (`_patterns`), not when the module
# is imported: every command imports this module, `--help` too.

# The window, in the order tried: specific wordings before general ones.
_LIMITS = (
    rf"maximum context length is {_N}",  # OpenAI, vLLM, DeepSeek, OpenRouter
    rf"context length is only {_N}",  # vLLM: "You passed N input tokens ..."
    rf"context length of only {_N}",  # LM Studio: "... loaded with context length of only N"
    rf"(?:tokens|\d) ?> ?{_N}",  # Anthropic: "N tokens > M maximum", "N + M > L"
    rf"maximum prompt length is {_N}",  # xAI
    rf"maximum number of tokens allowed \({_N}\)",  # Gemini
    rf"too large for model with {_N} maximum context",  # Mistral
    rf"context length \({_N}(?: tokens)?\)",  # Together: "... context length (N tokens)"
    rf"must be <= {_N}",  # TGI, Together: "`inputs` tokens + `max_new_tokens` must be <= N"
    rf"available context size \({_N} tokens\)",  # llama.cpp, Ollama
    rf"n_ctx: ?{_N}",  # LM Studio: "(n_keep: N>= n_ctx: M)"
    rf"while limit is {_N}",  # Cerebras
    rf"context (?:window|length|limit) of {_N}",  # "exceeds the context window of N tokens"
)

# The request's input. "you requested T tokens (A in the messages, C in the completion)"
# is read first, as T - C: the completion asked for is not the context's size.
_REQUESTED_TOTAL = rf"you requested (?:about )?{_N} tokens \(([^)]*)\)"
_COMPLETION_PART = rf"{_N} (?:in|for) the (?:completion|output)"
_REQUESTED = (
    rf"your messages resulted in {_N} tokens",  # OpenAI
    rf"you requested (?:about )?{_N} tokens",  # OpenAI, vLLM, OpenRouter, no parts given
    rf"prompt contains (?:at least )?{_N} (?:input )?tokens",  # vLLM, Mistral
    rf"you passed {_N} input tokens",  # vLLM
    rf"prompt is too long:? {_N} tokens",  # Anthropic
    rf"context limit: {_N} \+",  # Anthropic: "input length and `max_tokens` exceed ..."
    rf"input token count \({_N}\)",  # Gemini
    rf"request contains {_N} tokens",  # xAI
    rf"given: {_N} \W*inputs\W* tokens",  # TGI, Together
    rf"the input \({_N} tokens\)",  # Together
    rf"request \({_N} tokens\)",  # llama.cpp, Ollama
    rf"n_keep: ?{_N}",  # LM Studio
    rf"keep the first {_N} tokens",  # LM Studio
    rf"current length is {_N}",  # Cerebras
)


def _number(digits: str) -> int:
    return int(digits.replace(",", ""))


@functools.cache
def _patterns(wordings: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(map(re.compile, wordings))


def _first(patterns: tuple[re.Pattern[str], ...], text: str) -> int | None:
    for pattern in patterns:
        found = pattern.search(text)
        if found:
            return _number(found.group(1))
    return None


def _requested(text: str) -> int | None:
    [total_pattern, completion_pattern] = _patterns((_REQUESTED_TOTAL, _COMPLETION_PART))
    total = total_pattern.search(text)
    completion = completion_pattern.search(total.group(2)) if total else None
    if total and completion:
        return _number(total.group(1)) - _number(completion.group(1))
    return _first(_patterns(_REQUESTED), text)
