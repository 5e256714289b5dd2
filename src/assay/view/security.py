"""The view's guards, as one ASGI middleware: the key, the CSRF token and the response headers.

* **Key.** With a key set (required off loopback), every request carries it: an
  ``Authorization: Bearer KEY`` or ``X-Assay-Key`` header, or the ``assay_view_key`` cookie that
  a first visit to ``/?key=KEY`` (the URL ``assay view`` prints) sets; else 401, and 403 for a
  wrong key. Compared in constant time; the key never appears in a page or a log line.
* **CSRF.** A state-changing request (anything but GET, HEAD, OPTIONS) carries the server's
  token, made afresh at each start, as an ``X-CSRF-Token`` header (the page's script sends the
  one in ``<meta name="csrf-token">``) or a ``_csrf`` form field; a request whose ``Origin``
  names another host is refused too; else 403.
* **Headers** on every response: a Content-Security-Policy that loads nothing from elsewhere
  and runs only the view's own script file, ``nosniff``, ``same-origin`` referrers (with
  ``no-referrer`` Chromium sends ``Origin: null`` on a form POST, refused), framing denied.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs, urlsplit

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

KEY_COOKIE = "assay_view_key"
CSRF_FIELD = "_csrf"
CSRF_HEADER = "x-csrf-token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'none'"
)
_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (
        b"referrer-policy",
        b"same-origin",
    ),  # no-referrer makes Chromium send "Origin: null" on a form POST
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]
_MAX_FORM = 1024 * 1024
"""The largest form body read to find its token (a label and its reason are a few hundred
bytes)."""


@dataclass
class Guard:
    """The key (None: none asked) and this server's CSRF token."""

    key: str | None = None
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    def key_given(self, scope: Scope) -> str | None:
        """The key the request carries, if any (header, then cookie, then ``?key=``)."""
        headers = _headers(scope)
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            return auth[7:].strip()
        if "x-assay-key" in headers:
            return headers["x-assay-key"]
        cookie = SimpleCookie(headers.get("cookie", ""))
        if KEY_COOKIE in cookie:
            return cookie[KEY_COOKIE].value
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        return query["key"][0] if "key" in query else None

    def key_matches(self, given: str | None) -> bool:
        return self.key is None or (
            given is not None and hmac.compare_digest(given.encode(), self.key.encode())
        )

    def token_matches(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.csrf.encode())


class GuardMiddleware:
    """Wraps the view's app: refuses what :class:`Guard` does not allow, adds the headers."""

    def __init__(self, app: App, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = self.guard.key_given(scope)
        if self.guard.key is not None and not self.guard.key_matches(given):
            status = 401 if given is None else 403
            await _refuse(send, status, "a key is needed" if status == 401 else "wrong key")
            return
        if scope["method"] not in SAFE_METHODS:
            refused, receive = await self._csrf_refusal(scope, receive)
            if refused:
                await _refuse(send, 403, refused)
                return
        set_cookie = self.guard.key is not None and _from_query(scope)
        await self.app(scope, receive, self._with_headers(send, set_cookie))

    async def _csrf_refusal(self, scope: Scope, receive: Receive) -> tuple[str, Receive]:
        """Why the request is refused ("" if not), and the receive channel to go on with (the
        body replayed where it was read to find the form's token)."""
        headers = _headers(scope)
        origin = headers.get("origin")
        if origin and urlsplit(origin).netloc != headers.get("host", ""):
            return "cross-origin request refused", receive
        if self.guard.token_matches(headers.get(CSRF_HEADER)):
            return "", receive
        if not headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            return "missing CSRF token", receive
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > _MAX_FORM:
                return "form too large", receive
        token = parse_qs(body.decode("utf-8", "replace")).get(CSRF_FIELD, [None])[0]
        if not self.guard.token_matches(token):
            return "missing or wrong CSRF token", receive
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        return "", replay

    def _with_headers(self, send: Send, set_cookie: bool) -> Send:
        key = self.guard.key

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", []), *_HEADERS]
                if set_cookie and key is not None:
                    cookie = f"{KEY_COOKIE}={key}; Path=/; HttpOnly; SameSite=Strict"
                    headers.append((b"set-cookie", cookie.encode()))
                message["headers"] = headers
            await send(message)

        return sending


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


def _from_query(scope: Scope) -> bool:
    return b"key=" in scope.get("query_string", b"")


async def _refuse(send: Send, status: int, why: str) -> None:
    body = f"{status}: {why}\n".encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                *_HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
