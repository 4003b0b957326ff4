"""What a provider's failure means: an HTTP error response, a transport error or an error
event in a stream, classified into the error tree (rate limited, context too long,
transient, auth, bad request) with its Retry-After, and for a context too long the window
and the request's size the provider stated; one place for every adapter.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
import orjson

from orchestrator.errors import (
    ContextTooLong,
    ModelError,
    ProviderAuthError,
    ProviderBadRequest,
    ProviderFatal,
    ProviderRateLimited,
    ProviderTransient,
)


def transport_error(exc: httpx.TransportError, provider: str) -> ModelError:
    if isinstance(exc, httpx.UnsupportedProtocol):
        return ProviderFatal(
            f"bad base URL ({exc}): it must start with http(s)://", provider=provider
        )
    detail = str(exc) or type(exc).__name__
    return ProviderTransient(f"connection failed: {detail}", provider=provider)


_CONTEXT_RE = re.compile(
    r"context[ _-]?(?:length|window)"
    r"|prompt is too long"
    r"|exceeds? (?:the )?(?:available |model'?s? )?context"
    r"|maximum (?:prompt|input) length"
    r"|input is too long"
    r"|reduce the length of the (?:messages|prompt)"
    r"|input token count .* exceeds the maximum"  # Gemini
    r"|inputs\W* tokens \+ \W*max_new_tokens\W* must be",  # TGI, Together
    re.IGNORECASE,
)

_AUTH = {"authentication_error", "permission_error", "invalid_api_key"}
_QUOTA = {"insufficient_quota", "billing_error"}
_OVERLOADED = {"overloaded_error", "rate_limit_error", "rate_limit_exceeded"}
_TRANSIENT = {"api_error", "server_error", "timeout_error", "internal_server_error"}
_BAD_REQUEST = {"invalid_request_error", "not_found_error", "invalid_request", "not_found"}


def classify(
    *,
    provider: str,
    status: int | None,
    kind: str | None,
    code: str | None,
    message: str,
    retry_after: float | None = None,
    limit: int | None = None,
    requested: int | None = None,
) -> ModelError:
    """The error class for a provider failure, from an HTTP status and/or the error
    object's `type` / `code` (Anthropic, OpenAI, vLLM, llama.cpp and Ollama shapes).
    A context-too-long error carries the window and the request's size: `limit` and
    `requested` where the error body gave them as fields, else as its message states
    them."""
    tags = frozenset({(kind or "").lower(), (code or "").lower()} - {""})
    error = _classified(provider, status, tags, message, retry_after, limit, requested)
    error.status, error.tags = status, tags
    return error


def _classified(
    provider: str,
    status: int | None,
    tags: frozenset[str],
    message: str,
    retry_after: float | None,
    limit: int | None,
    requested: int | None,
) -> ModelError:
    text = f"HTTP {status}: {message}" if status else message
    if retry_after is not None and retry_after > 0:
        text += f" (the provider asks to wait {retry_after:.0f} s before trying again)"
    if (
        "context_length_exceeded" in tags
        or "exceed_context_size_error" in tags
        or "request_too_large" in tags
        or status == 413
        or (status in (None, 400, 422) and _CONTEXT_RE.search(message))
    ):
        stated_limit, stated_requested = ContextTooLong.stated(message)
        return ContextTooLong(
            text,
            provider=provider,
            limit=stated_limit if limit is None else limit,
            requested=stated_requested if requested is None else requested,
        )
    if status in (401, 403) or tags & _AUTH:
        return ProviderAuthError(text, provider=provider)
    if tags & _QUOTA or status == 402:
        return ProviderFatal(text, provider=provider)
    if status in (429, 529) or tags & _OVERLOADED:
        return ProviderRateLimited(text, provider=provider, retry_after=retry_after)
    if status in (408, 409) or (status is not None and status >= 500) or tags & _TRANSIENT:
        return ProviderTransient(text, provider=provider, retry_after=retry_after)
    if status in (400, 404, 422) or tags & _BAD_REQUEST:
        return ProviderBadRequest(text, provider=provider)
    return ProviderFatal(text, provider=provider)


def error_fields(payload: object) -> tuple[str | None, str | None, str | None]:
    """(type, code, message) of an error body in any of the shapes providers use:
    `{"error": {"type", "code", "message"}}`, `{"error": "text"}` (Ollama, LM Studio),
    `{"object": "error", "type", "message"}` (older vLLM, Mistral), a one-item list of
    these (Gemini), and `{"error": "<one of these as JSON>"}` (Ollama passing on its
    llama.cpp runner's error)."""
    source = _error_object(payload)
    if isinstance(source, str):
        return None, None, source
    if source is None:
        return None, None, None
    kind, code, message = (source.get(k) for k in ("type", "code", "message"))
    return (
        kind if isinstance(kind, str) else None,
        None if code is None else str(code),
        message if isinstance(message, str) else None,
    )


def context_fields(payload: object) -> tuple[int | None, int | None]:
    """(limit, requested) an error body gives as fields: llama.cpp's (and so Ollama's)
    `exceed_context_size_error` carries `n_ctx` and `n_prompt_tokens`."""
    source = _error_object(payload)
    if not isinstance(source, dict):
        return None, None
    limit, requested = source.get("n_ctx"), source.get("n_prompt_tokens")
    return (
        limit if isinstance(limit, int) and limit > 0 else None,
        requested if isinstance(requested, int) and requested > 0 else None,
    )


def _error_object(payload: object) -> dict[str, Any] | str | None:
    """The object of an error body that holds its type, code and message; its text when
    the body has only that; None when it is not an error body at all."""
    if isinstance(payload, list) and len(payload) == 1:
        payload = payload[0]
    if not isinstance(payload, dict):
        return None
    inner = payload.get("error")
    if isinstance(inner, str):
        nested = _json_or_none(inner) if inner.lstrip().startswith("{") else None
        return _error_object(nested) if isinstance(nested, dict) else inner
    return inner if isinstance(inner, dict) else payload


def _json_or_none(text: str) -> object:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def error_from_response(
    status: int, headers: httpx.Headers, body: bytes, provider: str
) -> ModelError:
    try:
        payload: object = orjson.loads(body)
    except orjson.JSONDecodeError:
        payload = None
    kind, code, message = error_fields(payload)
    limit, requested = context_fields(payload)
    if message is None:
        message = body.decode("utf-8", errors="replace").strip()[:500] or "(no message)"
    if status < 400:
        if kind is None and code is None:
            return ProviderFatal(
                f"expected an event stream, got JSON: {message}", provider=provider
            )
        status_or_none: int | None = None
    else:
        status_or_none = status
    return classify(
        provider=provider,
        status=status_or_none,
        kind=kind,
        code=code,
        message=message,
        retry_after=retry_after_seconds(headers),
        limit=limit,
        requested=requested,
    )


def retry_after_seconds(headers: httpx.Headers, now: datetime | None = None) -> float | None:
    """`retry-after-ms` (OpenAI), else `retry-after` as seconds or an HTTP date."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            pass
        if scale == 1.0:
            try:
                when = parsedate_to_datetime(value)
            except (TypeError, ValueError):
                return None
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
            return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
    return None
