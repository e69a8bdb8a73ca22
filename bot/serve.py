"""`kb serve`: the Slack bot as a long-running service.

- HTTP mode (the default): uvicorn serves `POST /slack/events` — Events API, interactivity and
  slash commands on one URL, every request's signature checked with SLACK_SIGNING_SECRET (its
  headers before its body, which is capped: `bot.signed_requests`) — and `GET /healthz`.
- Socket Mode (when SLACK_APP_TOKEN is set): the bot connects out to Slack over a WebSocket, so
  it needs no public URL; `GET /healthz` is still served on host:port for the orchestrator.
- `GET /metrics` (Prometheus, `bot.metrics`) on a port of its own, `KB_METRICS_PORT` (9464), bound
  to the same `--host`: it names every source and counts every question, which is the operator's
  business, not the internet's — and the events port is the one Slack, and so the internet,
  reaches. On the events port `/metrics` exists only when `KB_METRICS_TOKEN` is set and the
  scrape sends it (`Authorization: Bearer …`, compared in constant time): 404 without the
  setting, 401 with a missing or wrong token. Socket Mode has no events port: metrics port only.

Configuration mistakes are found before anything starts and reported as one line
(`StartupError`): a missing or rejected token, a missing signing secret, an unreachable
database, a port in use. The index, the sources, the knowledge base, the watcher and the
scheduler come from the composition root (`bot.wiring`), which also stops everything in order.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from slack_bolt import App
from slack_bolt.adapter.starlette.handler import to_bolt_request, to_starlette_response
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.signature import SignatureVerifier
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bot.slack.digest import digest_problem, schedule_digest
from bot.database_watch import EmbeddedWatch
from bot.housekeeping import start_housekeeping
from bot.metrics import SLACK_ACK_SECONDS, exposition
from bot.settings import Settings, secret
from bot.signed_requests import Refusal, signed_body
from bot.slack.audiences import SlackAccess
from bot.slack.app import build_app, slack_access
from bot.slack.client import web_client
from bot.slack.workers import Workers
from bot.wiring import ConfigurationError, Root
from indexing.index import Index

if TYPE_CHECKING:
    import uvicorn
    from slack_bolt.adapter.socket_mode import SocketModeHandler

    from indexing.storage import Listener
    from sources import SourceConfig

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
HEALTH_PATH = "/healthz"  # ready: the index can be read (503 while the database is away)
METRICS_PATH = "/metrics"  # Prometheus (bot.metrics)
LIVE_PATH = "/livez"  # alive: the process answers HTTP, and an embedded Postgres runs or could be started again
SHUTDOWN_SECONDS = 30  # how long a stopping `kb serve` lets the answers being written finish


StartupError = ConfigurationError  # what `kb serve` raises: the composition root's one-line error, and its own


def serve(settings: Settings, host: str = "127.0.0.1", port: int = 3000) -> None:
    """Check the configuration, open the index, start the indexing services (watcher, scheduled
    re-syncs), then answer Slack until interrupted.

    The parts come from the composition root (`bot.wiring.Root`), and everything started here is
    handed to it in dependency order, so it stops the other way round (on SIGTERM too): the
    metrics server, the Socket Mode connection (no new questions), the answers in flight, then
    housekeeping, the watcher and scheduler, the listener, the index, and the two sockets."""
    socket_mode = check_settings(settings)
    with Root(settings).running() as root:
        sources = root.sources
        client = check_slack(settings)
        if socket_mode:
            check_app_token(settings)
        if settings.kb_metrics_port and settings.kb_metrics_port == port:
            raise StartupError(f"KB_METRICS_PORT {port} is also the events port (--port): metrics need a port of their own")
        sock = bind(host, port)
        root.on_close(sock.close, "the events socket")
        metrics_sock = bind(host, settings.kb_metrics_port, setting="KB_METRICS_PORT")
        root.on_close(metrics_sock.close, "the metrics socket")
        index = root.index
        watch = watch_embedded(index)
        if watch is not None:
            root.on_close(watch.stop, "the embedded database's watch")
        warn_unconfigured_sources(index, sources)
        say_where_reads_go(index)
        warm_up(index)
        workers = Workers()
        access = slack_access(settings, client)
        knowledge = root.knowledge_base(llm=True)
        app = build_app(settings, index, client, kb=knowledge, socket_mode=socket_mode, workers=workers, access=access)
        listener = start_listening(index, access)
        root.on_close(listener.stop, "the listener")
        root.start_indexing(lambda scheduler: schedule_digest(scheduler, settings, knowledge, client))
        root.on_close(start_housekeeping(index, settings.kb_query_log_days), "housekeeping")
        root.on_close(lambda: drain(workers), "the answers in flight")  # questions arrive from here on
        if socket_mode:
            root.on_close(connect_socket_mode(app, settings).close, "the Socket Mode connection")  # no new questions
        root.on_close(serve_in_background(metrics_app(index), metrics_sock, settings.kb_log_level), "the metrics server")
        log.warning("Prometheus metrics on http://%s:%d%s", host, metrics_sock.getsockname()[1], METRICS_PATH)
        if socket_mode:
            log.warning("Docent is connected to Slack (Socket Mode); health check on http://%s:%d%s",
                        host, port, HEALTH_PATH)
            run_http(web_app(None, index, live=watch), sock, settings.kb_log_level)
        else:
            log.warning("Docent is listening on http://%s:%d%s", host, port, EVENTS_PATH)
            run_http(web_app(app, index, metrics_token=secret(settings.kb_metrics_token), live=watch,
                             signing_secret=secret(settings.slack_signing_secret)), sock, settings.kb_log_level)


def watch_embedded(index: Index) -> EmbeddedWatch | None:
    """With the embedded Postgres (no DATABASE_URL), a watch that starts it again if it dies and
    tells `/livez` while it cannot (`bot.database_watch`). None with a DATABASE_URL."""
    if index.config.database_url:
        return None
    return EmbeddedWatch(index.config.home).start()


def drain(workers: Workers) -> None:
    """Let the questions being answered finish (up to `SHUTDOWN_SECONDS`), then let the pools go."""
    if not workers.wait_idle(timeout=SHUTDOWN_SECONDS):
        log.warning("stopping with questions still being answered (waited %d s)", SHUTDOWN_SECONDS)
    workers.shutdown(wait=False)


def warn_unconfigured_sources(index: Index, sources: list[SourceConfig]) -> list[str]:
    """Say at start which sources in the index the configuration no longer names: they keep
    answering (nothing is deleted because a table vanished from the sources file) until an
    operator runs `kb forget NAME`. Returns their names."""
    from indexing.ingest import indexed_sources

    with index.read_session() as s:
        names = [row.name for row in indexed_sources.unconfigured(s, sources)]
    for name in names:
        log.warning("source %r is in the index but not in the configuration: its pages still answer; "
                    "`kb forget %s` removes them", name, name)
    return names


def say_where_reads_go(index: Index) -> None:
    """Say at start which server answers questions when it is not the primary (DATABASE_READ_URL):
    a standby that is not replaying, or far behind, is then visible in the first lines of the log."""
    reads = index.reads()
    if reads.standby:
        log.warning("questions read from %s; writes and notices go to %s", reads.describe(), index.location)


def connect_socket_mode(app: App, settings: Settings) -> SocketModeHandler:
    """Open the Socket Mode WebSocket now, so a wrong app token fails at start, in one line."""
    from slack_bolt.adapter.socket_mode import SocketModeHandler

    handler = SocketModeHandler(app, app_token=secret(settings.slack_app_token))
    try:
        handler.connect()  # type: ignore[no-untyped-call]  # slack_bolt leaves its Socket Mode handler unannotated
    except SlackApiError as exc:
        raise StartupError(f"Slack rejected SLACK_APP_TOKEN: {exc.response.get('error')}") from None
    except Exception as exc:
        raise StartupError(f"could not open a Socket Mode connection to Slack: {_one_line(exc)}") from None
    return handler


def start_listening(index: Index, access: SlackAccess | None = None) -> Listener:
    """Hear the other replicas on this database (`indexing.storage.notify`): a new keyword version is
    caught up with in the background, so the next question does not wait for it; a Slack access
    event one of them got drops the same cached details from `access` (the Slack app's
    `SlackAccess`), which in turn announces the events it gets to them. Returns the running listener.

    It listens on the primary (`index.url`) even when questions read from a hot standby, which
    refuses LISTEN; a version announced before the standby has replayed it is followed until it
    has (`Bm25Index.announced`)."""
    from indexing.storage import Listener, notify_now

    handlers = {"keyword": lambda notice: index.bm25.announced(int(notice.get("version") or 0))}
    if access is not None:
        access.announce = lambda kind, key: notify_now(index.engine, "access", what=kind, key=key)
        handlers["access"] = lambda notice: access.forget_cached(str(notice.get("what")), str(notice.get("key")))
    return Listener(index.url, handlers, on_reconnect=index.bm25.refresh).start()


def check_settings(settings: Settings) -> bool:
    """The tokens the chosen mode needs are present; returns whether it is Socket Mode."""
    if not secret(settings.slack_bot_token):
        raise StartupError("SLACK_BOT_TOKEN is not set: use the app's Bot User OAuth Token (xoxb-…)")
    if problem := digest_problem(settings):
        raise StartupError(problem)
    app_token = secret(settings.slack_app_token)
    if app_token:
        if not app_token.startswith("xapp-"):
            raise StartupError("SLACK_APP_TOKEN must be an app-level token (xapp-…) with the connections:write scope")
        return True
    if not secret(settings.slack_signing_secret):
        raise StartupError("SLACK_SIGNING_SECRET is not set: HTTP mode needs it to verify requests "
                           "(or set SLACK_APP_TOKEN to use Socket Mode)")
    return False


def check_slack(settings: Settings) -> WebClient:
    """`auth.test` with the bot token: a wrong token fails here, clearly, not on the first question."""
    client = web_client(settings)
    with _one_line_errors("SLACK_BOT_TOKEN", client.base_url):
        auth = client.auth_test()
    if not auth.get("bot_id"):
        raise StartupError("SLACK_BOT_TOKEN is not a bot token (auth.test reports no bot): use the xoxb- token")
    log.info("Slack: signed in as %s (%s) in %s", auth.get("user"), auth.get("user_id"), auth.get("team"))
    return client


def check_app_token(settings: Settings) -> None:
    """Socket Mode: ask for a WebSocket URL with the app-level token, as the handler will, so a
    wrong token is one line here instead of a logged traceback and a retry loop later."""
    app_token = secret(settings.slack_app_token) or ""  # check_settings saw it set
    client = web_client(settings, token=app_token)
    with _one_line_errors("SLACK_APP_TOKEN", client.base_url):
        client.apps_connections_open(app_token=app_token)


@contextmanager
def _one_line_errors(token_name: str, base_url: str) -> Iterator[None]:
    """Slack API failures at start-up as one StartupError line (the SDK's own per-try logging muted)."""
    sdk_log = logging.getLogger("slack_sdk.web.base_client")
    level = sdk_log.level
    sdk_log.setLevel(logging.CRITICAL)
    try:
        yield
    except SlackApiError as exc:
        raise StartupError(f"Slack rejected {token_name}: {exc.response.get('error')}") from None
    except Exception as exc:
        raise StartupError(f"could not reach the Slack API at {base_url}: {_one_line(exc)}") from None
    finally:
        sdk_log.setLevel(level)


def warm_up(index: Index) -> None:
    """Load the embedding model (~10 s), the keyword leg (its saved base: ~5 s at a million chunks)
    and the typo repair's word list now, not on the first question someone asks; the keyword leg
    on a thread of its own, beside the model. With an embedding service, its first reply also
    checks the vectors' size: a wrong model stops `kb serve` here, in one line; a service that is
    only down is retried at the first question."""
    import threading

    from indexing.vectors import EmbeddingDimensionError
    from indexing.search import english_words

    keyword = threading.Thread(target=_load_keyword_leg, args=(index,), name="docent-keyword-warm-up")
    keyword.start()
    english_words()

    try:
        index.embedder.embed_query("warm-up")
    except EmbeddingDimensionError as exc:
        raise StartupError(str(exc)) from None
    except Exception:
        log.warning("could not load the embedding model at start; the first question will try again", exc_info=True)
    if index.rerank is not None:  # a local cross-encoder loads now, not inside the first question's budget
        try:
            index.rerank.warm()
        except Exception:
            log.warning("could not load the reranker (%s) at start; questions use the fused order until it loads",
                        index.rerank.name, exc_info=True)
    keyword.join()


def _load_keyword_leg(index: Index) -> None:
    try:
        index.bm25.refresh()
    except Exception:
        log.warning("could not load the keyword index at start; the first question will try again", exc_info=True)


def metrics_app(index: Index) -> Starlette:
    """The metrics port's ASGI app: `GET /metrics`, nothing else."""
    return Starlette(routes=[Route(METRICS_PATH, _metrics_endpoint(index), methods=["GET"])])


def _metrics_endpoint(index: Index) -> Callable[[Request], Awaitable[Response]]:
    async def metrics(request: Request) -> Response:
        from prometheus_client import CONTENT_TYPE_LATEST

        return Response(await run_in_threadpool(exposition, index), media_type=CONTENT_TYPE_LATEST)

    return metrics


def bearer_matches(request: Request, token: str) -> bool:
    """Whether the request carries `Authorization: Bearer <token>` (compared in constant time)."""
    import hmac

    scheme, _, given = (request.headers.get("authorization") or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


def web_app(bolt_app: App | None, index: Index, metrics_token: str | None = None, *,
            signing_secret: str | None = None, live: EmbeddedWatch | None = None) -> Starlette:
    """The ASGI app: Slack's requests (if `bolt_app`, with the `signing_secret` they are signed
    with), the readiness check (`/healthz`) and the liveness check (`/livez`: the event loop
    answers and, with the embedded Postgres, its watch `live` has not found it dead for good —
    503 then) — and, with Slack's requests and a `metrics_token`, `/metrics` for scrapes that send
    that token (401 otherwise; no route at all without a token: 404).

    Slack's requests pass `bot.signed_requests` before Bolt reads them: the signature's headers
    first, the body capped while it is read, then the signature.

    Bolt's `SlackRequestHandler.handle` calls the synchronous `App.dispatch` inside the event
    loop, so one slow step (a database claim, the wait for a listener's ack) would stall every
    other request, health checks included. The adapter's own request/response converters are
    used instead, with `dispatch` on a worker thread.
    """

    async def healthz(request: Request) -> Response:
        try:
            chunks = await run_in_threadpool(index.chunk_count)
        except Exception as exc:
            log.warning("health check: the index is not readable: %s", _one_line(exc))
            return JSONResponse({"ok": False, "error": "index not readable"}, status_code=503)
        return JSONResponse({"ok": True, "chunks": chunks})

    async def livez(request: Request) -> Response:
        if live is not None and not live.alive:
            return JSONResponse({"ok": False, "error": "the embedded database stopped and cannot be started again"},
                                status_code=503)
        return JSONResponse({"ok": True})

    routes = [Route(HEALTH_PATH, healthz, methods=["GET"]), Route(LIVE_PATH, livez, methods=["GET"])]
    if bolt_app is not None and metrics_token:
        scrape = _metrics_endpoint(index)

        async def metrics(request: Request) -> Response:
            if not bearer_matches(request, metrics_token):
                return JSONResponse({"ok": False, "error": "a valid bearer token is required"}, status_code=401,
                                    headers={"WWW-Authenticate": 'Bearer realm="docent-metrics"'})
            return await scrape(request)

        routes.append(Route(METRICS_PATH, metrics, methods=["GET"]))
    if bolt_app is not None:

        if not signing_secret:
            raise ValueError("Slack's requests need the signing secret to be checked")
        verifier = SignatureVerifier(signing_secret)

        async def slack_events(request: Request) -> Response:
            started = time.perf_counter()
            body = await signed_body(request, verifier)  # headers, size, signature (bot.signed_requests)
            if isinstance(body, Refusal):
                return body.response()
            try:
                bolt_request = to_bolt_request(request, body)  # parses it: JSON, a form, a form's JSON payload
            except ValueError:
                return Refusal(400, "the body is not what its Content-Type says").response()
            response = await run_in_threadpool(bolt_app.dispatch, bolt_request)
            SLACK_ACK_SECONDS.observe(time.perf_counter() - started)  # Bolt has acked when dispatch returns
            return to_starlette_response(response)

        routes.append(Route(EVENTS_PATH, slack_events, methods=["POST"]))
    return Starlette(routes=routes)


def bind(host: str, port: int, setting: str | None = None) -> socket.socket:
    """The listening socket, bound before anything slow starts, so "port in use" is one clear line
    (naming the `setting` the port comes from, when it is not `--port`)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        named = f" ({setting})" if setting else ""
        raise StartupError(f"cannot listen on {host}:{port}{named}: {exc.strerror or exc}") from None
    return sock


def http_server(app: Starlette, log_level: str = "warning") -> uvicorn.Server:
    """A uvicorn server for `app` (started with `.run(sockets=[sock])`)."""
    import uvicorn

    config = uvicorn.Config(app, log_level=log_level.lower(), lifespan="off", access_log=False)
    return uvicorn.Server(config)


@contextmanager
def serving_in_thread(app: Starlette, host: str = "127.0.0.1", timeout: float = 10.0) -> Iterator[str]:
    """`app` served by uvicorn on a free port of `host` in a background thread, for tests and
    benchmarks (`kb serve` runs in the foreground through `run_http`). Yields the base URL once the
    server is listening; stops it on exit."""
    sock = bind(host, 0)
    stop = serve_in_background(app, sock, timeout=timeout)
    try:
        yield f"http://{host}:{sock.getsockname()[1]}"
    finally:
        stop()


def serve_in_background(app: Starlette, sock: socket.socket, log_level: str = "warning",
                        timeout: float = 10.0) -> Callable[[], None]:
    """`app` served by uvicorn on `sock` in a background thread (the metrics port beside `kb serve`'s
    main server; tests' servers). Returns once it is listening; the returned function stops it."""
    import threading

    server = http_server(app, log_level)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="docent-http", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the HTTP server did not start")
        time.sleep(0.01)

    def stop() -> None:
        server.should_exit = True
        thread.join(timeout=timeout)

    return stop


def run_http(app: Starlette, sock: socket.socket, log_level: str) -> None:
    """Serve until SIGINT/SIGTERM. uvicorn shuts down gracefully, then re-raises the signal, which
    the composition root's `running()` turns into a normal exit (`bot.wiring`), so everything
    else still stops in order."""
    http_server(app, log_level).run(sockets=[sock])


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
