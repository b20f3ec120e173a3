"""Plain HTTP requests to a dashboard (what a script, or an attacker, would send)."""

from __future__ import annotations

import urllib.error
import urllib.request


def status_of(url: str, authorization: str | None = None, form: bytes | None = None) -> int:
    """The HTTP status of a GET (a POST of the urlencoded ``form``, if given) to ``url``."""
    request = urllib.request.Request(url, data=form)
    if authorization is not None:
        request.add_header("Authorization", authorization)
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            status: int = response.status
            return status
    except urllib.error.HTTPError as error:
        error.close()
        return error.code
