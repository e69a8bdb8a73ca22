"""One JSON POST to a model service, retried the way services ask to be: the embedding service
(`indexing.vectors.embedding_service`) and the rerank service (`indexing.search.rerank_service`) share it.

- a rate-limited (429) or failing (5xx, connection refused or lost, timed out) request is
  retried with exponential backoff, waiting at least as long as the service's `Retry-After`;
- any other status fails at once, with the service's own message (a 401 will not heal);
- with a `deadline` (a `time.monotonic()` instant), no request runs and no wait ends past it:
  the question-time caller has a budget, and a retry that cannot finish inside it is not tried
  (`ServiceTimeout`). Without one, a sync waits out the service's hiccups.
"""

from __future__ import annotations

import logging
import time

log = logging.getLogger(__name__)

RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})


class ServiceError(RuntimeError):
    """The service refused (`status`: its HTTP status), or still failed after its retries."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ServiceTimeout(ServiceError):
    """The caller's deadline passed before the service answered."""


def http_client(api_key: str | None, timeout: float, connections: int):
    """The one httpx client a service backend keeps: its API key as a Bearer token, at most
    `connections` open at once (kept alive between calls)."""
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.Client(timeout=timeout, headers=headers, limits=limits)


def post_json(client, url: str, body: dict, *, what: str, retries: int = 5, backoff: float = 0.5,
              deadline: float | None = None):
    """POST `body` to `url` with `client` (an `httpx.Client`) and return the 200 response.

    `what` names the service in log lines and errors ("embedding service"). Raises
    `ServiceError`, or `ServiceTimeout` when `deadline` passed first."""
    import httpx

    problem = "no attempt"
    for attempt in range(retries + 1):
        wait = backoff * 2**attempt
        timeout = None if deadline is None else deadline - time.monotonic()
        if timeout is not None and timeout <= 0:
            raise ServiceTimeout(f"the {what} at {url} did not answer within its budget ({problem})")
        try:
            response = client.post(url, json=body, **({} if timeout is None else {"timeout": timeout}))
        except httpx.TimeoutException as exc:
            if deadline is not None and time.monotonic() >= deadline:
                raise ServiceTimeout(f"the {what} at {url} did not answer within its budget "
                                     f"({type(exc).__name__})") from None
            problem = f"{type(exc).__name__}: {exc}"
        except httpx.TransportError as exc:  # refused, reset
            problem = f"{type(exc).__name__}: {exc}"
        else:
            if response.status_code == 200:
                return response
            if response.status_code not in RETRIED_STATUSES:
                raise ServiceError(f"the {what} at {url} answered {response.status_code}: {message(response)}",
                                   response.status_code)
            problem = f"HTTP {response.status_code}"
            wait = max(wait, retry_after(response))
        if attempt < retries:
            if deadline is not None and time.monotonic() + wait >= deadline:
                raise ServiceTimeout(f"the {what} at {url} did not answer within its budget "
                                     f"({problem}; the next try was due in {wait:.1f} s)")
            log.warning("%s: %s; retrying in %.1f s (%d of %d)", what, problem, wait, attempt + 1, retries)
            time.sleep(wait)
    raise ServiceError(f"the {what} at {url} failed {retries + 1} times: {problem}")


def retry_after(response) -> float:
    """The seconds a `Retry-After` header asks for (0 when absent, or an HTTP date we do not parse)."""
    try:
        return max(0.0, float(response.headers.get("Retry-After", "0")))
    except ValueError:
        return 0.0


def message(response) -> str:
    """The service's own error message: OpenAI-style `{"error": {"message"}}`, TEI's `{"error"}`, else the body."""
    try:
        payload = response.json()
        error = payload.get("error") if isinstance(payload, dict) else None
        return (error.get("message") if isinstance(error, dict) else str(error or "")) or response.text[:200]
    except ValueError:
        return response.text[:200]
