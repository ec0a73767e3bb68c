"""The one door to language models: litellm behind a persistent cache, a concurrency limit and a ledger.

Settings come from the environment (any litellm provider, or any OpenAI-compatible server such as vLLM
or Ollama through FLYWHEEL_API_BASE):

  FLYWHEEL_MODEL        litellm model string, e.g. `gpt-4o`, `anthropic/claude-...`, `openai/qwen2.5-vl`.
                        With FLYWHEEL_API_BASE and no litellm provider prefix, `openai/` is prepended.
  FLYWHEEL_API_BASE     base URL of the server (e.g. http://127.0.0.1:8000/v1); unset for hosted providers.
  FLYWHEEL_API_KEY      key (default "sk-none", enough for local servers).
  FLYWHEEL_LLM_CACHE    cache directory (default <lake root>/llm_cache).
  FLYWHEEL_LLM_CONCURRENCY   calls in flight per (model, base URL) in this process (default 4).
  FLYWHEEL_LLM_RPM      requests per minute per (model, base URL) in this process (default: no limit).
  FLYWHEEL_LLM_TIMEOUT  seconds per attempt (default 120); two retries follow a 5xx or a timeout.
  FLYWHEEL_FALLBACK_MODELS   comma-separated litellm model strings (same base URL and key) the Router
                        tries, in order, when the main model still fails after its retries.
  FLYWHEEL_LLM_INPUT_COST_PER_TOKEN / FLYWHEEL_LLM_OUTPUT_COST_PER_TOKEN   USD, for models litellm
                        has no price for (without them such calls record no cost).

Every call, cache hits included, becomes an `llm_calls` ledger row; errors are results, never raised.
A repeated identical request is answered from the cache with no HTTP call, so re-runs cost nothing.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lake import Lake, utcnow
from lake.store import default_root

_DATA_URL = re.compile(r"data:(image/[\w.+-]+);base64,([A-Za-z0-9+/=]+)")
_LOCK = threading.Lock()
_SEMAPHORES: dict[tuple[str, str | None], threading.BoundedSemaphore] = {}
_ROUTERS: dict[LLMSettings, Any] = {}
_NEXT_SLOT: dict[tuple[str, str | None], float] = {}  # endpoint -> monotonic time the next call may start
_ROUTE = "flywheel"  # the Router's model group name


def configured() -> bool:
    """Whether a model is configured (FLYWHEEL_MODEL); without one the flywheel runs offline."""
    return bool(os.environ.get("FLYWHEEL_MODEL"))


class LLMNotConfigured(RuntimeError):
    pass


@dataclass(frozen=True)
class LLMSettings:
    model: str | None
    api_base: str | None = None
    api_key: str = "sk-none"
    cache_dir: Path | None = None  # None: <lake root>/llm_cache
    concurrency: int = 4
    requests_per_minute: float | None = None
    timeout: float = 120.0
    num_retries: int = 2
    fallback_models: tuple[str, ...] = ()
    input_cost_per_token: float | None = None
    output_cost_per_token: float | None = None

    @classmethod
    def from_env(cls) -> LLMSettings:
        env = os.environ.get
        cost = lambda name: float(env(name)) if env(name) else None
        return cls(
            model=env("FLYWHEEL_MODEL") or None,
            api_base=env("FLYWHEEL_API_BASE") or None,
            api_key=env("FLYWHEEL_API_KEY") or "sk-none",
            cache_dir=Path(env("FLYWHEEL_LLM_CACHE")) if env("FLYWHEEL_LLM_CACHE") else None,
            concurrency=int(env("FLYWHEEL_LLM_CONCURRENCY") or 4),
            requests_per_minute=float(env("FLYWHEEL_LLM_RPM")) if env("FLYWHEEL_LLM_RPM") else None,
            timeout=float(env("FLYWHEEL_LLM_TIMEOUT") or 120),
            input_cost_per_token=cost("FLYWHEEL_LLM_INPUT_COST_PER_TOKEN"),
            output_cost_per_token=cost("FLYWHEEL_LLM_OUTPUT_COST_PER_TOKEN"),
            fallback_models=tuple(m.strip() for m in (env("FLYWHEEL_FALLBACK_MODELS") or "").split(",") if m.strip()),
        )


@dataclass
class LLMResult:
    """One call's outcome; `error` is set instead of raising (HTTP errors after retries, timeouts, bad bodies)."""

    content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)  # prompt_tokens, completion_tokens, total_tokens
    cost: float | None = None  # USD; 0 for a cache hit, None when the model has no known price
    latency: float = 0.0  # seconds
    cache_hit: bool = False
    error: str | None = None
    raw: dict[str, Any] | None = None  # the response body as a dict
    request_hash: str = ""
    call_id: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def message(self) -> dict[str, Any]:
        """The assistant message, in the shape `sandboxes.action_parsing.parse_model_output` reads."""
        return {"role": "assistant", "content": self.content, "tool_calls": self.tool_calls}


class LLMClient:
    """Calls one configured model; thread-safe, so one client can serve a whole pool of workers."""

    def __init__(self, settings: LLMSettings | None = None, lake: Lake | None = None, run_id: str = "adhoc") -> None:
        self.settings = settings or LLMSettings.from_env()
        if not self.settings.model:
            raise LLMNotConfigured("no model configured: set FLYWHEEL_MODEL (and FLYWHEEL_API_BASE for a local server)")
        self.lake, self.run_id = lake, run_id
        root = lake.root if lake else default_root()
        self.cache_dir = Path(self.settings.cache_dir or root / "llm_cache")
        self._rows: list[dict[str, Any]] = []
        self._rows_lock = threading.Lock()
        self._id, self._flushes = uuid.uuid4().hex[:8], 0

    @property
    def model(self) -> str:
        return str(self.settings.model)

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
                 purpose: str = "policy", salt: str | None = None, **params: Any) -> LLMResult:
        """One chat completion. `salt` joins the cache key without being sent (e.g. to keep episodes apart)."""
        s = self.settings
        request = {"model": s.model, "api_base": s.api_base, "messages": messages, "tools": tools, "params": params}
        request |= {"salt": salt} if salt else {}
        key = hashlib.sha256(_canonical(request).encode()).hexdigest()
        result = self._cached(key)
        if result is None:
            result = self._call(messages, tools, params)
            result.request_hash = key
            if result.ok:
                self._store(key, result)
        result.call_id = uuid.uuid4().hex
        self._record(purpose, request, result)
        return result

    def flush(self, batch: str | None = None) -> list[dict[str, Any]]:
        """Write the buffered ledger rows to `llm_calls` (when the client has a lake); returns them."""
        with self._rows_lock:
            rows, self._rows = self._rows, []
            self._flushes += 1
            batch = batch or f"llm-{self._id}-{self._flushes}"
        if rows and self.lake is not None:
            self.lake.write("llm_calls", rows, self.run_id, batch)
        return rows

    # ---- the HTTP path ------------------------------------------------------------------------
    def _call(self, messages: list[dict], tools: list[dict] | None, params: dict[str, Any]) -> LLMResult:
        router = _router(self.settings)
        extra = {"tools": tools} if tools else {}
        t0 = time.monotonic()
        with _semaphore(self.settings):
            _wait_for_rate(self.settings)
            try:
                response = router.completion(model=_ROUTE, messages=messages, **extra, **params)
            except Exception as exc:  # litellm maps HTTP errors, timeouts and bad bodies to exceptions
                return LLMResult(error=_describe(exc), latency=time.monotonic() - t0)
        latency = time.monotonic() - t0
        cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
        try:
            raw = response.model_dump(mode="json")
            result = _from_raw(raw)
        except Exception as exc:  # a 200 whose body has no usable message
            return LLMResult(error=f"malformed_response: {_describe(exc)}", latency=latency)
        result.latency, result.cost = latency, cost
        return result

    # ---- cache --------------------------------------------------------------------------------
    def _path(self, key: str) -> Path:
        return self.cache_dir / key[:2] / f"{key}.json"

    def _cached(self, key: str) -> LLMResult | None:
        t0 = time.monotonic()
        try:
            entry = json.loads(self._path(key).read_text())
            result = _from_raw(entry["response"])
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            return None  # absent or unreadable: ask the model again
        result.cache_hit, result.cost, result.request_hash = True, 0.0, key
        result.latency = time.monotonic() - t0
        return result

    def _store(self, key: str, result: LLMResult) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w") as fh:
            json.dump({"request_hash": key, "model": self.settings.model, "response": result.raw}, fh)
        os.replace(tmp, path)

    # ---- ledger -------------------------------------------------------------------------------
    def _record(self, purpose: str, request: dict[str, Any], result: LLMResult) -> None:
        usage = result.usage
        row = {
            "call_id": result.call_id, "request_hash": result.request_hash, "purpose": purpose,
            "model": self.settings.model, "api_base": self.settings.api_base,
            "prompt_tokens": usage.get("prompt_tokens"), "completion_tokens": usage.get("completion_tokens"),
            "cost_usd": result.cost, "latency_s": result.latency, "cache_hit": result.cache_hit,
            "error": result.error, "request_json": _canonical(self._blobify(request)),
            "response_json": json.dumps(result.raw) if result.raw is not None else None,
            "run_id": self.run_id, "recorded_at": utcnow(),
        }
        with self._rows_lock:
            self._rows.append(row)

    def _blobify(self, value: Any) -> Any:
        """Images in a request -> `blob:sha256:<hex>` (stored in the lake's blobs), so ledger rows stay small."""
        def swap(match: re.Match) -> str:
            data = base64.b64decode(match.group(2))
            digest = self.lake.put_blob(data) if self.lake else hashlib.sha256(data).hexdigest()
            return f"blob:sha256:{digest}"

        if isinstance(value, str):
            return _DATA_URL.sub(swap, value) if value.startswith("data:") else value
        if isinstance(value, list):
            return [self._blobify(v) for v in value]
        if isinstance(value, dict):
            return {k: self._blobify(v) for k, v in value.items()}
        return value


def _from_raw(raw: dict[str, Any]) -> LLMResult:
    message = raw["choices"][0]["message"]
    usage = {k: int(v) for k, v in (raw.get("usage") or {}).items()
             if k in ("prompt_tokens", "completion_tokens", "total_tokens") and v is not None}
    return LLMResult(content=message.get("content"), tool_calls=list(message.get("tool_calls") or []),
                     usage=usage, raw=raw)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _describe(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:500]


def _semaphore(settings: LLMSettings) -> threading.BoundedSemaphore:
    """One limit per endpoint for the whole process, shared by every client (the first client sets it)."""
    key = (str(settings.model), settings.api_base)
    with _LOCK:
        if key not in _SEMAPHORES:
            _SEMAPHORES[key] = threading.BoundedSemaphore(max(1, settings.concurrency))
        return _SEMAPHORES[key]


def _wait_for_rate(settings: LLMSettings) -> None:
    """Spaces calls to one endpoint at least 60/rpm seconds apart, across every client in the process."""
    if not settings.requests_per_minute:
        return
    key = (str(settings.model), settings.api_base)
    with _LOCK:
        now = time.monotonic()
        start = max(now, _NEXT_SLOT.get(key, now))
        _NEXT_SLOT[key] = start + 60.0 / settings.requests_per_minute
    time.sleep(max(0.0, start - time.monotonic()))


def _litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never download the price list
    try:
        import litellm
    except ImportError as exc:
        raise ImportError("the LLM path needs litellm: pip install 'litellm>=1.50' (or pip install -e .)") from exc
    litellm.suppress_debug_info = True
    litellm.drop_params = True  # a provider that lacks a sampling parameter ignores it instead of failing
    return litellm


def _router(settings: LLMSettings) -> Any:
    """One litellm Router per settings: a single deployment, retries on 5xx and timeouts."""
    with _LOCK:
        if settings not in _ROUTERS:
            litellm = _litellm()
            models = [settings.model, *settings.fallback_models]
            model_list = []
            for i, model in enumerate(models):
                params: dict[str, Any] = {"model": _provider_model(litellm, settings, model), "api_key": settings.api_key}
                if settings.api_base:
                    params["api_base"] = settings.api_base
                if settings.input_cost_per_token is not None:
                    params["input_cost_per_token"] = settings.input_cost_per_token
                if settings.output_cost_per_token is not None:
                    params["output_cost_per_token"] = settings.output_cost_per_token
                model_list.append({"model_name": _ROUTE if i == 0 else f"{_ROUTE}-fallback-{i}", "litellm_params": params})
            fallbacks = [{_ROUTE: [m["model_name"] for m in model_list[1:]]}] if len(model_list) > 1 else []
            _ROUTERS[settings] = litellm.Router(
                model_list=model_list, num_retries=settings.num_retries, timeout=settings.timeout, fallbacks=fallbacks,
            )
        return _ROUTERS[settings]


def _provider_model(litellm: Any, settings: LLMSettings, model: str | None = None) -> str:
    """`Qwen/Qwen2.5-VL-7B` on a local server means `openai/Qwen/Qwen2.5-VL-7B` to litellm."""
    model = str(model or settings.model)
    if not settings.api_base:
        return model
    try:
        litellm.get_llm_provider(model)
        return model
    except Exception:
        return f"openai/{model}"
