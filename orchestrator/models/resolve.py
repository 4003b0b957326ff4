"""Turn a model spec from the command line or config (`scripted:PATH`, `openai:gpt-4o`, ...)
into a `Model`. Environment, config and HTTP client are passed in: nothing here reads
globals.

Specs: `scripted:PATH`, `openai:MODEL`, `openai-responses:MODEL` (OpenAI's Responses API),
`anthropic:MODEL`, `ollama:MODEL`, `openai-compatible:MODEL@URL` (or
`openai-compatible:MODEL` with a base URL in the config), and `NAME:MODEL` for a provider
the config defines under `[providers.NAME]`; several of them, comma-separated, make a
fallback chain.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Mapping
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

import httpx
import msgspec

from orchestrator.config import AgentConfig, Config, ProviderConfig, ProviderKind
from orchestrator.errors import ConfigError
from orchestrator.models.anthropic import DEFAULT_MAX_TOKENS, AnthropicEndpoint, AnthropicModel
from orchestrator.models.base import Model
from orchestrator.models.fallback import COOLDOWN, SEPARATOR, Fallback, chain_specs
from orchestrator.models.http import HttpOptions, RetryPolicy, Timeouts
from orchestrator.models.limits import CONCURRENCY, Backoff, Rate
from orchestrator.models.openai import OpenAIChatModel, OpenAIEndpoint
from orchestrator.models.openai_responses import OpenAIResponsesModel, ResponsesEndpoint

KNOWN_PREFIXES = (
    "scripted",
    "openai",
    "openai-responses",
    "anthropic",
    "ollama",
    "openai-compatible",
)

USAGE_HINT = (
    "pass --model scripted:PATH (a JSON script, see docs/scripted-model.md), "
    "openai:MODEL, openai-responses:MODEL, anthropic:MODEL, ollama:MODEL or "
    "openai-compatible:MODEL@URL"
)

OPENAI_URL = "https://api.openai.com/v1"
ANTHROPIC_URL = "https://api.anthropic.com"
OLLAMA_URL = "http://localhost:11434/v1"

_BUILTIN_KINDS: dict[str, ProviderKind] = {
    "openai": "openai",
    "openai-responses": "openai-responses",  # OpenAI's own, over the Responses API
    "anthropic": "anthropic",
    "ollama": "openai",
    "openai-compatible": "openai",
}


class ProviderInfo(msgspec.Struct, frozen=True):
    """How a provider is reached. `key_env` names the variable holding its API key
    (None: no key is sent); the key itself is only read when a model is built."""

    name: str
    kind: ProviderKind
    base_url: str | None  # None: each spec gives it (MODEL@URL)
    key_env: str | None
    key_required: bool
    settings: ProviderConfig

    def key(self, env: Mapping[str, str]) -> str | None:
        value = env.get(self.key_env) if self.key_env else None
        return value or None


def provider_names(config: Config | None = None) -> list[str]:
    configured = [n for n in (config.providers if config else {}) if n not in _BUILTIN_KINDS]
    return [*_BUILTIN_KINDS, *sorted(configured)]


def provider_info(
    name: str, *, env: Mapping[str, str], config: Config | None = None
) -> ProviderInfo:
    """Where provider `name` lives and which variable holds its key. Environment
    variables (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`, `OLLAMA_HOST`) win over the
    config file, which wins over the defaults."""
    settings = (config or Config()).provider(name)
    kind = _BUILTIN_KINDS.get(name) or settings.kind
    if kind is None:
        if name in (config.providers if config else {}):
            raise ConfigError(
                f'[providers.{name}] needs kind = "openai" (chat completions), '
                '"openai-responses" or "anthropic"'
            )
        raise ConfigError(f"unknown model provider {name!r}: {USAGE_HINT}")
    named = settings.api_key_env
    url: str | None
    key_env: str | None
    match name:
        case "openai" | "openai-responses":
            url = env.get("OPENAI_BASE_URL") or settings.base_url or OPENAI_URL
            key_env, required = ("OPENAI_API_KEY" if named is None else named), True
        case "anthropic":
            url = env.get("ANTHROPIC_BASE_URL") or settings.base_url or ANTHROPIC_URL
            key_env, required = ("ANTHROPIC_API_KEY" if named is None else named), True
        case "ollama":
            host = env.get("OLLAMA_HOST")
            url = _ollama_url(host) if host else settings.base_url or OLLAMA_URL
            key_env, required = named, bool(named)
        case "openai-compatible":
            # The official SDK's convention: OPENAI_API_KEY, sent if it is set.
            url = settings.base_url
            key_env, required = ("OPENAI_API_KEY" if named is None else named), bool(named)
        case _:
            url = settings.base_url or (ANTHROPIC_URL if kind == "anthropic" else None)
            if url is None:
                raise ConfigError(f"[providers.{name}] needs a base_url")
            key_env, required = named, bool(named)
    return ProviderInfo(name, kind, url, key_env or None, required and bool(key_env), settings)


def resolve_model(
    spec: str | None,
    *,
    env: Mapping[str, str],
    http: httpx.AsyncClient | None = None,
    config: Config | None = None,
    role: str | None = None,
    backoff: Backoff | None = None,
) -> Model:
    """Build the model named by `spec`, or raise `ConfigError` with one clear line.
    `http` is the session's shared client (without one, each call opens its own);
    `backoff`, shared by the session's models, makes a rate limit told to one call hold
    every call to the same provider and key.

    With a `role`, that role's settings under `[agents.ROLE]` win over the provider's
    where they are set: its output limit `max_tokens`, its `temperature` and its
    prompt caching (`cache`, `cache_ttl`, `prompt_cache_key`). They live in the model,
    so agents whose roles differ in them have models of their own.

    A spec of several, comma-separated (`anthropic:A,openai:B`), is a fallback chain
    (models/fallback.py), its cool-down the role's `cooldown`."""
    if not spec:
        raise ConfigError(f"no model given: {USAGE_HINT}")
    if SEPARATOR in spec:
        return _chain(spec, env=env, http=http, config=config, role=role, backoff=backoff)
    return _one_model(spec, env=env, http=http, config=config, role=role, backoff=backoff)


def _one_model(
    spec: str,
    *,
    env: Mapping[str, str],
    http: httpx.AsyncClient | None,
    config: Config | None,
    role: str | None,
    backoff: Backoff | None,
) -> Model:
    prefix, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise ConfigError(f"model {spec!r} is not PROVIDER:NAME: {USAGE_HINT}")
    if prefix == "scripted":
        from orchestrator.models.scripted import ScriptedModel

        return ScriptedModel.from_file(Path(rest))
    info = provider_info(prefix, env=env, config=config)
    key = info.key(env)
    if key and not info.key_required and not info.settings.allow_key_over_http:
        # A key sent only by convention (openai-compatible and OPENAI_API_KEY) is not sent
        # in clear text to another machine: such a server rarely wants OpenAI's key.
        url = _split_url(rest)[1] or info.base_url
        if url is not None and url.startswith("http://") and not _loopback(url):
            key = None
    if info.key_required and key is None:
        raise ConfigError(
            f"{info.key_env} is not set: export it for {spec}, or name another variable"
            f" with api_key_env under [providers.{prefix}] in the config"
        )
    options = _http_options(info.settings, http, backoff, _rate(config or Config(), spec))
    s = info.settings
    own = (config or Config()).agent(role) if role else AgentConfig()
    cache = _caching(s, own)
    max_tokens = own.max_tokens or s.max_tokens
    if info.kind == "anthropic":
        endpoint = AnthropicEndpoint(
            model=rest,
            api_key=key,
            base_url=_checked_url(
                info.base_url or ANTHROPIC_URL, spec, key=key, allow_http=s.allow_key_over_http
            ),
            headers=dict(s.headers),
            max_tokens=max_tokens or DEFAULT_MAX_TOKENS,
            thinking_budget=s.thinking_budget,
            provider=prefix,
            cache=cache.cache or "auto",
            cache_ttl=cache.cache_ttl or "5m",
        )
        return AnthropicModel(endpoint, options)
    model, url = _split_url(rest)
    if url is None and info.base_url is None and "@" in rest:
        # MODEL@SOMETHING, and no URL: say so, with the spec made well-formed.
        model, _, given = rest.partition("@")
        host = given if "://" not in given and given.rstrip(":") not in ("http", "https") else ""
        fixed = f"http://{host}" if host else "http://localhost:8000/v1"
        raise ConfigError(
            f"{spec!r}: the server after @ must be an http:// or https:// URL, e.g. "
            f"{prefix}:{model or 'MODEL'}@{fixed}"
        )
    if not model:
        raise ConfigError(f"{spec!r} names no model: e.g. {prefix}:llama3@{url or OLLAMA_URL}")
    if url is None:
        url = info.base_url
    if url is None:
        raise ConfigError(
            f"{spec!r} names no server: pass {prefix}:MODEL@URL (e.g. "
            f"{prefix}:{model}@http://localhost:8000/v1) or set base_url under [providers.{prefix}]"
        )
    base_url = _checked_url(url, spec, key=key, allow_http=s.allow_key_over_http)
    return _openai_model(info, model, base_url, key, max_tokens, own.temperature, cache, options)


def _chain(
    spec: str,
    *,
    env: Mapping[str, str],
    http: httpx.AsyncClient | None,
    config: Config | None,
    role: str | None,
    backoff: Backoff | None,
) -> Fallback:
    specs = chain_specs(spec)
    if len(specs) != len(set(specs)) or not all(specs):
        raise ConfigError(
            f"fallback chain {spec!r} names a model twice or leaves one empty: "
            "give each model once, first choice first (anthropic:A,openai:B)"
        )
    models = [
        _one_model(one, env=env, http=http, config=config, role=role, backoff=backoff)
        for one in specs
    ]
    cooldown = (config or Config()).agent(role).cooldown if role else None
    return Fallback(models, cooldown=COOLDOWN if cooldown is None else cooldown)


def _openai_model(
    info: ProviderInfo,
    model: str,
    base_url: str,
    key: str | None,
    max_tokens: int | None,
    temperature: float | None,
    cache: _Caching,
    options: HttpOptions,
) -> Model:
    """A model of an OpenAI provider: over the Responses API for one of kind
    `openai-responses` (`openai-responses:`, or `[providers.NAME] kind`), over chat
    completions for the rest."""
    prefix, s = info.name, info.settings
    if info.kind == "openai-responses":
        endpoint = ResponsesEndpoint(
            model=model,
            base_url=base_url,
            api_key=key,
            headers=dict(s.headers),
            max_tokens=max_tokens,
            temperature=temperature,
            prompt_cache_key=cache.prompt_cache_key is not False,
            provider=prefix,
        )
        return OpenAIResponsesModel(endpoint, options)
    openai_endpoint = OpenAIEndpoint(
        provider=prefix,
        model=model,
        base_url=base_url,
        api_key=key,
        headers=dict(s.headers),
        max_tokens_field=s.max_tokens_field
        or ("max_completion_tokens" if prefix == "openai" else "max_tokens"),
        max_tokens=max_tokens,
        temperature=temperature,
        prompt_cache_key=cache.prompt_cache_key
        if cache.prompt_cache_key is not None
        else prefix == "openai",
    )
    return OpenAIChatModel(openai_endpoint, options)


class _Caching(msgspec.Struct, frozen=True):
    cache: Literal["off", "auto"] | None
    cache_ttl: Literal["5m", "1h"] | None
    prompt_cache_key: bool | None


def _caching(provider: ProviderConfig, r: AgentConfig) -> _Caching:
    """The prompt-caching settings in force: each of the role's that is set, else the
    provider's (None where neither says: the adapter's default)."""
    return _Caching(
        cache=provider.cache if r.cache is None else r.cache,
        cache_ttl=provider.cache_ttl if r.cache_ttl is None else r.cache_ttl,
        prompt_cache_key=provider.prompt_cache_key
        if r.prompt_cache_key is None
        else r.prompt_cache_key,
    )


def _split_url(rest: str) -> tuple[str, str | None]:
    for marker in ("@http://", "@https://"):
        model, sep, url = rest.partition(marker)
        if sep:
            return model, marker[1:] + url
    return rest, None


def _checked_url(url: str, spec: str, *, key: str | None = None, allow_http: bool = False) -> str:
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"base URL {url!r} for {spec} must start with http:// or https://")
    if key and url.startswith("http://") and not allow_http and not _loopback(url):
        raise ConfigError(
            f"{spec} would send its API key unencrypted to {url}; use https://, or set "
            "allow_key_over_http = true under its [providers.NAME] if that is intended"
        )
    return url


def _loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def key_variables(*, env: Mapping[str, str], config: Config | None = None) -> list[str]:
    """The names of the variables that hold the providers' API keys (built-in and
    configured): what the shell's commands never inherit and what is redacted."""
    names = {"OPENAI_API_KEY", "ANTHROPIC_API_KEY"}
    for name in provider_names(config):
        try:
            info = provider_info(name, env=env, config=config)
        except ConfigError:
            continue
        if info.key_env:
            names.add(info.key_env)
    return sorted(names)


def _ollama_url(host: str) -> str:
    # OLLAMA_HOST is what the ollama CLI uses: "host:port" or a URL, without /v1.
    base = host if host.startswith(("http://", "https://")) else f"http://{host}"
    parts = urlsplit(base.rstrip("/"))
    if parts.port is None:
        parts = parts._replace(netloc=f"{parts.netloc}:11434")
    return urlunsplit(parts) + "/v1"


def _rate(config: Config, spec: str) -> Rate | None:
    """The requests and tokens a minute `[limits]` allows the model of `spec` (None:
    no limit): its entry by the spec, else by the spec without a server after @
    (`openai-compatible:MODEL`), else by the model alone. The model's name keys its
    count."""
    prefix, _, rest = spec.partition(":")
    model = _split_url(rest)[0]
    limit = config.limit(spec) or config.limit(f"{prefix}:{model}")
    return None if limit is None else Rate(model, rpm=limit.rpm, tpm=limit.tpm)


def _http_options(
    settings: ProviderConfig,
    http: httpx.AsyncClient | None,
    backoff: Backoff | None = None,
    rate: Rate | None = None,
) -> HttpOptions:
    timeouts = Timeouts()
    for field, value in (
        ("connect", settings.connect_timeout),
        ("first_byte", settings.first_byte_timeout),
        ("idle", settings.idle_timeout),
    ):
        if value is not None:
            timeouts = dataclasses.replace(timeouts, **{field: value})
    retry = RetryPolicy()
    if settings.max_retries is not None:
        retry = dataclasses.replace(retry, max_retries=settings.max_retries)
    concurrency = settings.concurrency or CONCURRENCY
    return HttpOptions(
        client=http,
        timeouts=timeouts,
        retry=retry,
        backoff=backoff,
        concurrency=concurrency,
        rate=rate,
    )
