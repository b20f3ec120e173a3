"""Authentication: every request carries the token or basic auth, or is refused (401).

A browser opens the dashboard once with ``?token=<token>``: the answer is a redirect
to the same page without it, with an HttpOnly session cookie that holds a digest of
the token (never the token). Scripts send ``Authorization: Bearer <token>``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from workpool.dashboard.options import DashboardOptions

SESSION_COOKIE = "workpool_dashboard_session"


class AuthMiddleware:
    """Refuses requests that do not authenticate as ``options`` asks (when it asks)."""

    def __init__(self, app: ASGIApp, options: DashboardOptions) -> None:
        self.app = app
        self.options = options
        self._session = _digest(options.token) if options.token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.options.guarded:
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        if self._authenticated(request):
            await self.app(scope, receive, send)
            return
        response = self._login(request) or self._refusal()
        await response(scope, receive, send)

    def _authenticated(self, request: Request) -> bool:
        header = request.headers.get("authorization", "")
        scheme, _, credentials = header.partition(" ")
        if self.options.token is not None:
            if scheme.lower() == "bearer" and _same(credentials.strip(), self.options.token):
                return True
            cookie = request.cookies.get(SESSION_COOKIE)
            if cookie is not None and self._session is not None and _same(cookie, self._session):
                return True
        if self.options.basic_auth is not None and scheme.lower() == "basic":
            return _basic_matches(credentials.strip(), self.options.basic_auth)
        return False

    def _login(self, request: Request) -> Response | None:
        """The redirect that sets the session cookie, for a GET with the right token."""
        token = request.query_params.get("token")
        if request.method != "GET" or token is None or self.options.token is None:
            return None
        if not _same(token, self.options.token) or self._session is None:
            return None
        kept = [item for item in request.query_params.multi_items() if item[0] != "token"]
        query = urlencode(kept)
        response = RedirectResponse(request.url.path + (f"?{query}" if query else ""), 303)
        response.set_cookie(
            SESSION_COOKIE,
            self._session,
            path=request.scope.get("root_path") or "/",
            httponly=True,
            samesite="lax",
            secure=request.url.scheme == "https",
        )
        return response

    def _refusal(self) -> Response:
        ways = []
        if self.options.token is not None:
            ways.append("open it with ?token=<token> or send 'Authorization: Bearer <token>'")
        headers = {}
        if self.options.basic_auth is not None:
            ways.append("log in with basic auth")
            headers["WWW-Authenticate"] = 'Basic realm="workpool dashboard", charset="UTF-8"'
        text = f"workpool dashboard: authentication required ({'; or '.join(ways)})\n"
        return PlainTextResponse(text, status_code=401, headers=headers)


def _digest(token: str) -> str:
    """What the session cookie holds: a keyed digest of the token."""
    return hmac.new(token.encode(), b"workpool dashboard session", hashlib.sha256).hexdigest()


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())


def _basic_matches(credentials: str, expected: tuple[str, str]) -> bool:
    try:
        decoded = base64.b64decode(credentials, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return False
    user, _, password = decoded.partition(":")
    # Both compared, whatever the first gives: the time does not tell which was wrong.
    return _same(user, expected[0]) & _same(password, expected[1])
