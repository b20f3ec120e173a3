"""The web dashboard: see and operate queues, runs, steps and crons in a browser.

A screen over the pool's public API, like the CLI; nothing below imports it. Needs the
``dashboard`` extra (``pip install 'workpool[dashboard]'``: Starlette, uvicorn, Jinja2).

- ``create_dashboard(pool, ...)``: an ASGI app, to mount at a path or serve.
- ``workpool dashboard``: serves it (``server.py``); it binds to 127.0.0.1 and refuses
  another address without a token or basic auth.

Modules: ``app`` (routes), ``pages`` and ``actions`` (GET and POST endpoints),
``overview``, ``runs`` and ``workflows`` (what each page reads), ``charts``,
``timeline`` and ``crons`` (pure shaping of what was read), ``rendering`` (templates),
``auth``, ``forms`` (CSRF) and ``headers`` (guards), ``options``, ``server``.
"""

from workpool.dashboard.app import create_dashboard

__all__ = ["create_dashboard"]
