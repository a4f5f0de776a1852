"""The LLM client the synthesizer talks to.

``RepairLLM`` is the whole contract: one call that sends chat messages and
returns the model's reply as a JSON object. ``OpenAIRepairLLM`` implements
it with the official ``openai`` SDK against any server that speaks the chat
completions protocol (OpenAI itself, vLLM, Ollama, LM Studio, ...).

Errors are sorted into two kinds, because the durable repair queue treats
them differently:

* ``LLMTransientError`` – worth retrying later: timeout, connection
  failure, HTTP 408, 429 and any 5xx;
* ``LLMReplyError`` – the server answered and will likely answer the same
  again: other 4xx, a refusal, empty content, content that is not a JSON
  object.

The SDK's own retries are off by default (``max_retries=0``): the queue
already retries with backoff, and two retry layers multiply waiting time.

``timeout`` is a deadline for the whole call, not a per-read limit. The
SDK's ``timeout`` bounds each socket operation, so a server that drips one
byte a second (in the headers or the body) would hold a call forever. The
client we build therefore talks through a network backend whose every
connect, read and write gets at most the time left until the call's
deadline (kept in a context variable, so concurrent calls on other threads
have their own) and fails as a timeout once it has passed.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .._checks import check_int
from ..errors import ConfigError, InvalidInputError, LLMError, LLMReplyError, LLMTransientError
from ..text.logs import library_logger
from ..text.sanitize import check_text

if TYPE_CHECKING:
    import httpx2
    import openai

# The SDK is imported when a client is made, not with the package: it costs
# ~0.4 s, and hosts on the template path (or the CLI) never need it.

__all__ = [
    "ENV_API_KEY",
    "ENV_BASE_URL",
    "ENV_MODEL",
    "OpenAIRepairLLM",
    "RepairLLM",
    "parse_json_object",
]

logger = library_logger("memos_feedback.llm")

ENV_API_KEY = "OPENAI_API_KEY"
ENV_BASE_URL = "OPENAI_BASE_URL"
ENV_MODEL = "MEMOS_FEEDBACK_LLM_MODEL"

DEFAULT_TIMEOUT = 30.0
# Local servers ignore the key, but the SDK insists on having one.
_PLACEHOLDER_KEY = "not-needed"
# A repair reply is a few hundred bytes; anything this large is not one.
MAX_REPLY_CHARS = 100_000
_TRANSIENT_STATUS = frozenset({408, 429})
_ROLES = frozenset({"system", "user", "assistant", "developer"})


@runtime_checkable
class RepairLLM(Protocol):
    """Anything that can turn chat messages into one JSON object.

    Implementations raise ``LLMTransientError`` for failures worth retrying
    and ``LLMReplyError`` (or another ``LLMError``) for the rest. The
    synthesizer treats any other exception as a failed reply too.
    """

    def complete_json(self, messages: Sequence[Mapping[str, str]], schema_name: str) -> dict[str, Any]: ...


class OpenAIRepairLLM:
    """``RepairLLM`` on the OpenAI chat completions API (JSON mode).

    Arguments win over environment variables: ``model`` falls back to
    ``MEMOS_FEEDBACK_LLM_MODEL``, ``base_url`` to ``OPENAI_BASE_URL``,
    ``api_key`` to ``OPENAI_API_KEY``. Without a model there is nothing to
    call, so construction raises ``LLMError``. Without a key, a custom
    ``base_url`` gets a placeholder (local servers do not check it), while
    the default OpenAI endpoint raises ``LLMError``.

    ``timeout`` is the deadline in seconds for one ``complete_json`` call —
    connect, request, headers and body together, however slowly the server
    sends them (see the module docstring); ``max_retries`` is passed to the
    SDK (0 by default), and its retries share that deadline. ``temperature``
    defaults to 0 so a retried repair reads the same. ``client`` lets a host
    pass a pre-built ``openai.OpenAI``.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = 0,
        temperature: float | None = 0.0,
        max_tokens: int | None = 400,
        client: openai.OpenAI | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        if environ is not None and not isinstance(environ, Mapping):
            raise InvalidInputError(f"environ must be a mapping, got {type(environ).__name__}")
        env = os.environ if environ is None else environ
        self.model = _resolve_model(model, env)
        self.timeout = _positive_seconds(timeout)
        self.max_retries = check_int("max_retries", max_retries, lo=0)
        self.temperature = _opt_temperature(temperature)
        self.max_tokens = _opt_max_tokens(max_tokens)
        self.base_url = _base_url(base_url, env)
        import openai

        if client is not None:
            if not isinstance(client, openai.OpenAI):
                raise InvalidInputError(f"client must be an openai.OpenAI, got {type(client).__name__}")
            # A host's own client keeps its own transport: the deadline is
            # then only as good as that client's timeouts (docs/LLM.md).
            self._client = client
            return
        key = _opt_text("api_key", api_key) or _opt_text(ENV_API_KEY, env.get(ENV_API_KEY))
        if key is None:
            if self.base_url is None:
                raise LLMError(
                    f"no API key: pass api_key= or set {ENV_API_KEY} "
                    f"(or point base_url / {ENV_BASE_URL} at a local server)"
                )
            key = _PLACEHOLDER_KEY
        self._client = openai.OpenAI(
            api_key=key,
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=self.max_retries,
            http_client=_deadline_http_client(self.timeout),
        )

    def __repr__(self) -> str:
        # Never the key: reprs end up in logs and tracebacks.
        return f"OpenAIRepairLLM(model={self.model!r}, base_url={self.base_url!r}, timeout={self.timeout})"

    def complete_json(
        self, messages: Sequence[Mapping[str, str]], schema_name: str, *, timeout: float | None = None
    ) -> dict[str, Any]:
        """Send ``messages`` and return the reply parsed as a JSON object.

        ``schema_name`` names the expected reply in logs and errors (JSON
        mode has no schema parameter; the prompt describes the shape).
        ``timeout`` shortens this call's deadline (recall's judge has a
        turn waiting on it); it never lengthens the client's.
        """
        import openai

        payload = _check_messages(messages)
        schema_name = check_text("schema_name", schema_name)
        limit = self.timeout if timeout is None else min(self.timeout, _positive_seconds(timeout))
        started = time.monotonic()
        token = _DEADLINE.set(started + limit)
        try:
            response = self._client.chat.completions.create(**self._request(payload, limit))
        except openai.OpenAIError as exc:
            raise _translate(exc, limit) from exc
        except ValueError as exc:
            # The SDK decodes the body itself and lets a JSONDecodeError through
            # when the server sends a broken body with a JSON content type.
            raise LLMReplyError(f"{schema_name}: the server sent a body that is not JSON") from exc
        finally:
            _DEADLINE.reset(token)
        elapsed_ms = int((time.monotonic() - started) * 1000)
        try:
            content = _reply_content(response)
        except LLMReplyError:
            logger.info("%s reply unusable after %d ms (model %s)", schema_name, elapsed_ms, self.model)
            raise
        except (AttributeError, IndexError, TypeError) as exc:
            # A body that parsed as JSON but is not shaped like a completion.
            reason = type(exc).__name__
            raise LLMReplyError(f"{schema_name}: reply is not a chat completion ({reason})") from exc
        reply = parse_json_object(content, schema_name)
        logger.debug("%s reply in %d ms (model %s)", schema_name, elapsed_ms, self.model)
        return reply

    def _request(self, payload: list[dict[str, str]], limit: float) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.model,
            "messages": payload,
            "response_format": {"type": "json_object"},
        }
        if limit < self.timeout:
            # A host's own client has no deadline transport: its per-read timeouts shrink instead.
            request["timeout"] = limit
        if self.temperature is not None:
            request["temperature"] = self.temperature
        if self.max_tokens is not None:
            request["max_tokens"] = self.max_tokens
        return request


def parse_json_object(content: str, schema_name: str = "reply") -> dict[str, Any]:
    """Parse model output that should be one JSON object.

    Tolerates surrounding whitespace and a Markdown code fence (```json …```),
    which many models add even in JSON mode. Anything else raises
    ``LLMReplyError``.
    """
    if not isinstance(content, str):
        raise InvalidInputError(f"content must be a str, got {type(content).__name__}")
    if not isinstance(schema_name, str):
        raise InvalidInputError(f"schema_name must be a str, got {type(schema_name).__name__}")
    text = _unfence(content.strip())
    if not text:
        raise LLMReplyError(f"{schema_name}: empty reply")
    if len(text) > MAX_REPLY_CHARS:
        raise LLMReplyError(f"{schema_name}: reply too large ({len(text)} characters)")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise LLMReplyError(f"{schema_name}: reply is not valid JSON") from exc
    if not isinstance(value, dict):
        raise LLMReplyError(f"{schema_name}: reply is JSON but not an object ({type(value).__name__})")
    return value


def _unfence(text: str) -> str:
    if not text.startswith("```"):
        return text
    newline = text.find("\n")
    # "```json {...}```" on one line: drop the fence word up to the first brace.
    body = text[newline + 1 :] if newline >= 0 else text[3:].lstrip("abcdefghijklmnopqrstuvwxyz")
    body = body.rstrip()
    if body.endswith("```"):
        body = body[:-3]
    return body.strip()


def _reply_content(response: Any) -> str:
    choices = response.choices
    if not choices:
        raise LLMReplyError("reply has no choices")
    message = choices[0].message
    refusal = getattr(message, "refusal", None)
    if refusal:
        raise LLMReplyError("the model refused to answer")
    content = message.content
    if not isinstance(content, str) or not content.strip():
        reason = getattr(choices[0], "finish_reason", None)
        raise LLMReplyError(f"empty reply content (finish_reason={reason!r})")
    return content


def _translate(exc: openai.OpenAIError, timeout: float) -> LLMError:
    import openai

    # Order matters: APITimeoutError is a subclass of APIConnectionError.
    if isinstance(exc, openai.APITimeoutError):
        return LLMTransientError(
            f"LLM request timed out: no complete reply within its {timeout:g} s deadline"
            " (connect + headers + body)"
        )
    if isinstance(exc, openai.APIConnectionError):
        return LLMTransientError(f"could not reach the LLM server ({type(exc.__cause__).__name__})")
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        if status >= 500 or status in _TRANSIENT_STATUS:
            return LLMTransientError(f"LLM server answered HTTP {status}")
        return LLMReplyError(f"LLM server rejected the request: HTTP {status}")
    if isinstance(exc, openai.APIResponseValidationError):
        return LLMReplyError("LLM server sent a body that is not a chat completion")
    return LLMReplyError(f"LLM call failed: {type(exc).__name__}")


def _check_messages(messages: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence) or not messages:
        raise InvalidInputError("messages must be a non-empty sequence of {role, content} mappings")
    out: list[dict[str, str]] = []
    for item in messages:
        if not isinstance(item, Mapping):
            raise InvalidInputError(f"message must be a mapping, got {type(item).__name__}")
        role, content = item.get("role"), item.get("content")
        if not isinstance(role, str) or role not in _ROLES or not isinstance(content, str):
            raise InvalidInputError(f"message needs a role in {sorted(_ROLES)} and str content")
        out.append({"role": role, "content": check_text("message content", content)})
    return out


def _resolve_model(model: str | None, env: Mapping[str, str]) -> str:
    resolved = _opt_text("model", model) or _opt_text(ENV_MODEL, env.get(ENV_MODEL))
    if resolved is None:
        raise LLMError(f"no LLM model configured: pass model= or set {ENV_MODEL}")
    return resolved


def _base_url(value: object, env: Mapping[str, str]) -> str | None:
    """The endpoint: ``base_url`` (``InvalidInputError`` if bad), else the environment's (``ConfigError``)."""
    given = _opt_text("base_url", value)
    if given is not None:
        problem = _url_problem(given)
        if problem:
            raise InvalidInputError(f"base_url {problem}, got {given!r:.80}")
        return given
    from_env = _opt_text(ENV_BASE_URL, env.get(ENV_BASE_URL))
    if from_env is not None:
        problem = _url_problem(from_env)
        if problem:
            raise ConfigError(ENV_BASE_URL, from_env, problem)
    return from_env


def _url_problem(url: str) -> str | None:
    """What is wrong with ``url`` as an endpoint, or None.

    Parsed here as the HTTP library will: its own error would otherwise come
    out of the constructor (a NUL, a bad port) or of the first call.
    """
    import httpx

    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        return f"is not a valid URL ({exc})"
    if parsed.scheme not in ("http", "https") or not parsed.host:
        return "must be an http:// or https:// URL with a host"
    return None


def _opt_text(name: str, value: object) -> str | None:
    if value is None:
        return None
    return check_text(name, value).strip() or None


def _opt_temperature(value: object) -> float | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < 0
    ):
        raise InvalidInputError(f"temperature must be a number >= 0 or None, got {value!r}")
    return float(value)


def _opt_max_tokens(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    raise InvalidInputError(f"max_tokens must be a positive int or None, got {value!r}")


# -- the deadline ---------------------------------------------------------------

# Monotonic time by which the current call must be done; None outside a call
# (a request made on the client by other code keeps plain per-read timeouts).
_DEADLINE: ContextVar[float | None] = ContextVar("memos_feedback_llm_deadline", default=None)
# A write is sent in pieces so that a server reading slowly cannot hold one
# large write past the deadline (each piece gets the time left).
_WRITE_PIECE = 64 * 1024


def _time_left(timeout: float | None, expired: type[Exception]) -> float | None:
    """``timeout`` shortened to the time left before the call's deadline.

    Raises ``expired`` (an httpcore timeout, which the SDK reports as
    ``APITimeoutError``) when the deadline has passed.
    """
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise expired("the call's deadline has passed")
    return left if timeout is None else min(timeout, left)


def _deadline_http_client(timeout: float) -> httpx2.Client:
    """An SDK-ready HTTP client whose transport enforces ``_DEADLINE``."""
    import openai

    transport = _deadline_transport_class()()
    client: httpx2.Client = openai.DefaultHttpxClient(transport=transport, timeout=timeout)
    return client


@lru_cache(maxsize=1)
def _deadline_transport_class() -> type[httpx2.BaseTransport]:
    # Built on first use, on the HTTP stack the SDK uses: recent openai
    # releases ship it as httpx2/httpcore2, older ones as httpx/httpcore
    # (the same API under another name).
    try:
        import httpcore2 as httpcore
        import httpx2 as httpx
    except ImportError:  # pragma: no cover - an older openai release
        import httpcore  # type: ignore[no-redef, import-not-found, unused-ignore]
        import httpx  # type: ignore[no-redef, import-not-found, unused-ignore]

    class DeadlineStream(httpcore.NetworkStream):
        def __init__(self, inner: httpcore.NetworkStream) -> None:
            self._inner = inner

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return self._inner.read(max_bytes, _time_left(timeout, httpcore.ReadTimeout))

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            for start in range(0, len(buffer), _WRITE_PIECE):
                piece = buffer[start : start + _WRITE_PIECE]
                self._inner.write(piece, _time_left(timeout, httpcore.WriteTimeout))

        def close(self) -> None:
            self._inner.close()

        def start_tls(
            self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
        ) -> httpcore.NetworkStream:
            left = _time_left(timeout, httpcore.ConnectTimeout)
            return DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, left))

        def get_extra_info(self, info: str) -> Any:
            return self._inner.get_extra_info(info)

    class DeadlineBackend(httpcore.NetworkBackend):
        def __init__(self) -> None:
            self._inner = httpcore.SyncBackend()

        def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,
            local_address: str | None = None,
            socket_options: Iterable[Any] | None = None,
        ) -> httpcore.NetworkStream:
            # DNS resolution inside create_connection has no timeout of its
            # own; an IP or a local name resolves at once (docs/LLM.md).
            left = _time_left(timeout, httpcore.ConnectTimeout)
            return DeadlineStream(self._inner.connect_tcp(host, port, left, local_address, socket_options))

        def connect_unix_socket(
            self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
        ) -> httpcore.NetworkStream:
            left = _time_left(timeout, httpcore.ConnectTimeout)
            return DeadlineStream(self._inner.connect_unix_socket(path, left, socket_options))

        def sleep(self, seconds: float) -> None:
            self._inner.sleep(seconds)

    # httpcore's exceptions as httpx's public ones, as httpx's own transport
    # maps them: the SDK turns httpx.TimeoutException into APITimeoutError
    # (and anything else into APIConnectionError), so an expired deadline
    # must reach it as an httpx timeout. Narrowest first, so the first match
    # wins (an httpcore.ReadTimeout is also an httpcore.TimeoutException).
    error_map: tuple[tuple[type[Exception], type[httpx.TransportError]], ...] = (
        (httpcore.ConnectTimeout, httpx.ConnectTimeout),
        (httpcore.ReadTimeout, httpx.ReadTimeout),
        (httpcore.WriteTimeout, httpx.WriteTimeout),
        (httpcore.PoolTimeout, httpx.PoolTimeout),
        (httpcore.TimeoutException, httpx.TimeoutException),
        (httpcore.ConnectError, httpx.ConnectError),
        (httpcore.ReadError, httpx.ReadError),
        (httpcore.WriteError, httpx.WriteError),
        (httpcore.NetworkError, httpx.NetworkError),
        (httpcore.ProxyError, httpx.ProxyError),
        (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
        (httpcore.LocalProtocolError, httpx.LocalProtocolError),
        (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
        (httpcore.ProtocolError, httpx.ProtocolError),
    )

    @contextmanager
    def httpx_errors() -> Iterator[None]:
        try:
            yield
        except Exception as exc:
            for source, target in error_map:
                if isinstance(exc, source):
                    raise target(str(exc)) from exc
            raise

    class DeadlineResponseStream(httpx.SyncByteStream):
        # The body is read lazily, after handle_request has returned, so its
        # reads (and their deadline timeouts) need the same mapping.
        def __init__(self, inner: Iterable[bytes]) -> None:
            self._inner = inner

        def __iter__(self) -> Iterator[bytes]:
            with httpx_errors():
                yield from self._inner

        def close(self) -> None:
            # Closing httpcore's stream hands the connection back to the pool
            # (or drops it if the body was not read to the end).
            close = getattr(self._inner, "close", None)
            if close is not None:
                close()

    class DeadlineTransport(httpx.BaseTransport):
        # Our own transport on httpx's public transport API: httpx's
        # HTTPTransport takes no network backend, and replacing its pool
        # would mean writing a private attribute of another library.
        def __init__(self) -> None:
            # httpx's defaults for a plain HTTPTransport: TLS verified against
            # the usual CA bundle (SSL_CERT_FILE / SSL_CERT_DIR honoured),
            # httpx.DEFAULT_LIMITS, HTTP/1.1 only.
            self._pool = httpcore.ConnectionPool(
                ssl_context=httpx.create_ssl_context(),
                max_connections=100,
                max_keepalive_connections=20,
                keepalive_expiry=5.0,
                network_backend=DeadlineBackend(),
            )

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            stream = request.stream
            if not isinstance(stream, httpx.SyncByteStream):
                # Only an AsyncClient sends an async body; this pool is sync.
                raise TypeError("DeadlineTransport needs a synchronous request body")
            core_request = httpcore.Request(
                method=request.method,
                url=httpcore.URL(
                    scheme=request.url.raw_scheme,
                    host=request.url.raw_host,
                    port=request.url.port,
                    target=request.url.raw_path,
                ),
                headers=request.headers.raw,
                content=stream,
                # Carries httpx's per-operation timeouts ("timeout"), which
                # the backend shortens to the deadline.
                extensions=request.extensions,
            )
            with httpx_errors():
                core_response = self._pool.handle_request(core_request)
            body = core_response.stream
            if not isinstance(body, Iterable):  # pragma: no cover - a sync pool's body is sync
                raise TypeError("httpcore returned an asynchronous body from a synchronous pool")
            return httpx.Response(
                status_code=core_response.status,
                headers=core_response.headers,
                stream=DeadlineResponseStream(body),
                extensions=core_response.extensions,
            )

        def close(self) -> None:
            self._pool.close()

    return DeadlineTransport


def _positive_seconds(value: object) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
        if math.isfinite(seconds) and seconds > 0:
            return seconds
    raise InvalidInputError(f"timeout must be a positive number of seconds, got {value!r}")
