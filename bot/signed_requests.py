"""Slack's HTTP requests checked before anything reads them: headers, then a capped body, then the
signature.

Bolt reads a request whole, and parses it, before it checks the signature, with no limit on its
size: unsigned 400 MB POSTs to `/slack/events` were held in memory (issue 45: four took `kb serve`
from 0.36 to 3.62 GB, past the pod's memory limit), and unsigned malformed ones (a timestamp `abc`,
a body that is not JSON) ended in HTTP 500 and a traceback each. So `kb serve` checks, in front of
Bolt (`signed_body`):

1. the headers, before a byte of the body is read: `X-Slack-Request-Timestamp` digits and within
   `MAX_AGE_SECONDS` of now, `X-Slack-Signature` `v0=` and 64 hex digits, a `Content-Length` (if
   any) at most `MAX_BODY_BYTES` — 401, 400 or 413 at once;
2. the body as it arrives, stopped at `MAX_BODY_BYTES` (a chunked one too: 413) and within
   `READ_SECONDS` (408) — Slack's own requests are a few KB, far under the cap;
3. the body UTF-8 (400), as Slack's are, and the signature (slack_sdk's `SignatureVerifier`:
   HMAC-SHA256, compared in constant time) — 401.

Only then does Bolt see the request (and check the signature again, as it always does). A signed
request sent again within its five minutes passes here: nothing here may wait for the database
before Slack's 3-second ack, so a replayed `/kb` is claimed once after its ack
(`bot.slack.services.first_time`), and events are claimed by their message (`bot.slack.store`). A refusal
is a status, a one-line JSON reason and `Connection: close` (the rest of an unread body is not
read), and one INFO log line without a traceback: whoever can reach the URL can send anything.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from dataclasses import dataclass

from slack_sdk.signature import SignatureVerifier
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 1 << 20  # 1 MiB: Slack's events, commands and form submissions are a few KB
MAX_AGE_SECONDS = 300  # Slack's rule (and Bolt's): a request signed longer ago, or ahead, is refused
READ_SECONDS = 10.0  # the whole body, however it is dripped
TIMESTAMP = re.compile(r"[0-9]{1,12}")
SIGNATURE = re.compile(r"v0=[0-9a-f]{64}")


@dataclass(frozen=True)
class Refusal:
    """Why a request is not handed to Bolt: an HTTP status and a one-line reason."""

    status: int
    reason: str

    def response(self) -> Response:
        return JSONResponse({"ok": False, "error": self.reason}, status_code=self.status,
                            headers={"Connection": "close"})


def check_headers(request: Request, now: float) -> Refusal | None:
    """The signature's headers present, well formed and fresh, and a declared size under the cap."""
    stamps = request.headers.getlist("x-slack-request-timestamp")
    signatures = request.headers.getlist("x-slack-signature")
    if len(stamps) != 1 or len(signatures) != 1:
        return Refusal(401, "a Slack request needs one X-Slack-Request-Timestamp and one X-Slack-Signature")
    if not TIMESTAMP.fullmatch(stamps[0]) or abs(now - int(stamps[0])) > MAX_AGE_SECONDS:
        return Refusal(401, "X-Slack-Request-Timestamp is not a time within five minutes of now")
    if not SIGNATURE.fullmatch(signatures[0]):
        return Refusal(401, "X-Slack-Signature is not v0= and 64 hex digits")
    lengths = request.headers.getlist("content-length")
    if len(lengths) > 1 or (lengths and not lengths[0].isdigit()):
        return Refusal(400, "Content-Length is not one number")
    if lengths and int(lengths[0]) > MAX_BODY_BYTES:
        return Refusal(413, f"the body is over {MAX_BODY_BYTES} bytes")
    return None


async def read_capped(request: Request) -> bytes | Refusal:
    """The body, read as it arrives and given up at `MAX_BODY_BYTES` or after `READ_SECONDS`."""
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(READ_SECONDS):
            async for chunk in request.stream():
                size += len(chunk)
                if size > MAX_BODY_BYTES:
                    return Refusal(413, f"the body is over {MAX_BODY_BYTES} bytes")
                chunks.append(chunk)
    except TimeoutError:
        return Refusal(408, f"the body did not arrive within {READ_SECONDS:g} s")
    except ClientDisconnect:
        return Refusal(400, "the client went away before the body arrived")
    return b"".join(chunks)


async def signed_body(request: Request, verifier: SignatureVerifier) -> bytes | Refusal:
    """The body of a request Slack signed, or why it is refused."""
    if refusal := check_headers(request, time.time()):
        return _refused(request, refusal)
    body = await read_capped(request)
    if isinstance(body, Refusal):
        return _refused(request, body)
    try:
        body.decode("utf-8")  # Slack's are; the verifier decodes it (and would raise) before it hashes
    except UnicodeDecodeError:
        return _refused(request, Refusal(400, "the body is not UTF-8"))
    stamp, signature = request.headers["x-slack-request-timestamp"], request.headers["x-slack-signature"]
    if not verifier.is_valid(body, stamp, signature):
        return _refused(request, Refusal(401, "the signature does not match the body"))
    return body


def _refused(request: Request, refusal: Refusal) -> Refusal:
    client = request.client.host if request.client else "?"
    log.info("refused a request to %s from %s: %d %s", request.url.path, client, refusal.status, refusal.reason)
    return refusal
