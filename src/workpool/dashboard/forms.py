"""The forms of actions: CSRF tokens (a cookie and a hidden field that must match) and
reading a POSTed form, refused when the dashboard is read-only."""

from __future__ import annotations

import hmac
import secrets
from urllib.parse import parse_qs

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from workpool.dashboard.options import DashboardOptions

CSRF_COOKIE = "workpool_dashboard_csrf"
CSRF_FIELD = "csrf"
MAX_FORM_BYTES = 16 * 1024


def csrf_token(request: Request) -> str:
    """The browser's CSRF token: its cookie's, or a new one (``remember_csrf`` sends it)."""
    existing = request.cookies.get(CSRF_COOKIE)
    if existing and len(existing) == 43:
        return existing
    return secrets.token_urlsafe(32)


def remember_csrf(request: Request, response: Response, token: str) -> None:
    """Set the CSRF cookie on ``response`` unless the browser already has ``token``."""
    if request.cookies.get(CSRF_COOKIE) == token:
        return
    response.set_cookie(
        CSRF_COOKIE,
        token,
        path=request.scope.get("root_path") or "/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


async def read_form(request: Request, options: DashboardOptions) -> dict[str, str]:
    """The fields of a POSTed form (first value of each); 403 when read-only, when the
    request comes from another origin, or when its CSRF token is not the cookie's."""
    if options.read_only:
        raise HTTPException(403, "this dashboard is read-only: it takes no action")
    origin = request.headers.get("origin")
    if origin is not None and origin.partition("://")[2] != request.url.netloc:
        raise HTTPException(403, "refused: the form was sent from another site")
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        raise HTTPException(413, "the form is too large")
    fields = {
        name: values[0] for name, values in parse_qs(body.decode("utf-8", "replace"), True).items()
    }
    cookie = request.cookies.get(CSRF_COOKIE, "")
    token = fields.get(CSRF_FIELD, "")
    if not cookie or not hmac.compare_digest(cookie.encode(), token.encode()):
        raise HTTPException(
            403, "refused: the form is stale or came from another site; reload the page"
        )
    return fields
