"""One JSON POST to a model service, retried the way services ask to be: the embedding service
(`indexing.vectors.embedding_service`) and the rerank service (`indexing.search.rerank_service`) share it.

- a rate-limited (429) or failing (5xx, connection refused or lost, timed out) request is
  retried with exponential backoff, waiting at least as long as the service's `Retry-After`;
- any other status fails at once, with the service's own message (a 401 will not heal);
- with a `deadline` (a `time.monotonic()` instant), no request runs and no wait ends past it:
  the question-time caller has a budget, and a retry that cannot finish inside it is not tried
  (`ServiceTimeout`). Without one, a sync waits out the service's hiccups.
- the deadline is one instant for the whole call, not a timeout per read: the reply is read as
  it arrives and the connection is closed at the deadline, so a service dripping a byte every
  100 ms cannot hold the caller's worker (httpx's own timeouts restart with every byte);
- a reply over `max_bytes` is refused and its connection closed;
- the service's own error text goes into errors and logs with the API key taken out (a service
  that echoes the `Authorization` header would put the key in the log).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)

RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})


class ServiceError(RuntimeError):
    """The service refused (`status`: its HTTP status), or still failed after its retries."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ServiceTimeout(ServiceError):
    """The caller's deadline passed before the service answered."""


def http_client(api_key: str | None, timeout: float, connections: int) -> httpx.Client:
    """The one httpx client a service backend keeps: its API key as a Bearer token, at most
    `connections` open at once (kept alive between calls)."""
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.Client(timeout=timeout, headers=headers, limits=limits)


def post_json(client: httpx.Client, url: str, body: Mapping[str, object], *, what: str, retries: int = 5,
              backoff: float = 0.5, deadline: float | None = None, max_bytes: int | None = None) -> httpx.Response:
    """POST `body` to `url` with `client` (an `httpx.Client`) and return the 200 response, read
    whole (at most `max_bytes`).

    `what` names the service in log lines and errors ("embedding service"). Raises
    `ServiceError`, or `ServiceTimeout` when `deadline` passed first."""
    import httpx

    secrets = _secrets(client)

    problem = "no attempt"
    for attempt in range(retries + 1):
        wait = backoff * 2**attempt
        timeout = None if deadline is None else deadline - time.monotonic()
        if timeout is not None and timeout <= 0:
            raise ServiceTimeout(f"the {what} at {url} did not answer within its budget ({problem})")
        try:
            response = _post(client, url, body, timeout, deadline, max_bytes, what)
        except httpx.TimeoutException as exc:
            if deadline is not None and time.monotonic() >= deadline:
                raise ServiceTimeout(f"the {what} at {url} did not answer within its budget "
                                     f"({type(exc).__name__})") from None
            problem = redact(f"{type(exc).__name__}: {exc}", secrets)
        except httpx.TransportError as exc:  # refused, reset
            problem = redact(f"{type(exc).__name__}: {exc}", secrets)
        else:
            if response.status_code == 200:
                return response
            if response.status_code not in RETRIED_STATUSES:
                raise ServiceError(f"the {what} at {url} answered {response.status_code}: "
                                   f"{redact(message(response), secrets)}", response.status_code)
            problem = f"HTTP {response.status_code}"
            wait = max(wait, retry_after(response))
        if attempt < retries:
            if deadline is not None and time.monotonic() + wait >= deadline:
                raise ServiceTimeout(f"the {what} at {url} did not answer within its budget "
                                     f"({problem}; the next try was due in {wait:.1f} s)")
            log.warning("%s: %s; retrying in %.1f s (%d of %d)", what, problem, wait, attempt + 1, retries)
            time.sleep(wait)
    raise ServiceError(f"the {what} at {url} failed {retries + 1} times: {problem}")


def _post(client: httpx.Client, url: str, body: Mapping[str, object], timeout: float | None, deadline: float | None,
          max_bytes: int | None, what: str) -> httpx.Response:
    """One POST, its reply read as it arrives: past `deadline` or over `max_bytes` the response
    is closed unread (httpx then drops the connection rather than reuse it) and the call fails."""
    import httpx

    with client.stream("POST", url, json=body,
                       timeout=httpx.USE_CLIENT_DEFAULT if timeout is None else timeout) as response:
        received = bytearray()
        for chunk in response.iter_bytes():  # decoded (gzip…): the cap holds for what is parsed
            received += chunk
            if max_bytes is not None and len(received) > max_bytes:
                raise ServiceError(f"the {what} at {url} sent over {max_bytes:,} bytes; not read")
            if deadline is not None and time.monotonic() >= deadline:
                raise httpx.ReadTimeout(f"reply still arriving at the deadline ({len(received):,} bytes read)")
        headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in ("content-encoding", "content-length")]
        return httpx.Response(response.status_code, headers=headers, content=bytes(received), request=response.request)


def _secrets(client: httpx.Client) -> list[str]:
    """The API key the client sends (its Bearer token), to be kept out of errors and logs."""
    authorization = str(client.headers.get("Authorization", "")).strip()
    token = authorization.partition(" ")[2].strip()
    return [t for t in (authorization, token) if len(t) >= 4]


def redact(text: str, secrets: list[str]) -> str:
    """`text` with every secret in it replaced by "[redacted]"."""
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "[redacted]")
    return text


def retry_after(response: httpx.Response) -> float:
    """The seconds a `Retry-After` header asks for (0 when absent, or an HTTP date we do not parse)."""
    try:
        return max(0.0, float(response.headers.get("Retry-After", "0")))
    except ValueError:
        return 0.0


def message(response: httpx.Response) -> str:
    """The service's own error message: OpenAI-style `{"error": {"message"}}`, TEI's `{"error"}`, else the body."""
    try:
        payload = response.json()
        error = payload.get("error") if isinstance(payload, dict) else None
        said = error.get("message") if isinstance(error, dict) else error
        return str(said or "") or response.text[:200]
    except ValueError:
        return response.text[:200]
