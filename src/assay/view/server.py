"""Serving the view with uvicorn: on loopback unless a key is set, in this thread or another.

:func:`bind_problem` says why a host may not be bound (off loopback without a key), before
anything starts; :class:`ViewServer` runs uvicorn in a thread (``assay eval --view``, tests) and
knows its URL once it listens (port 0 picks a free port).
"""

from __future__ import annotations

import ipaddress
import threading
import time

import uvicorn

from assay.view.app import make_app
from assay.view.context import ViewSettings

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def is_loopback(host: str) -> bool:
    """``host`` names this machine only."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind_problem(host: str, key: str | None) -> str | None:
    """Why ``host`` may not be served (None: it may): anywhere but loopback needs a key."""
    if is_loopback(host) or key:
        return None
    return (
        f"serving on {host} (not loopback) needs --key or ASSAY_VIEW_KEY: anyone who can reach "
        "the port could read the history and change labels"
    )


class ViewServer:
    """The view served by uvicorn in a daemon thread; :meth:`start` returns once it listens."""

    def __init__(self, settings: ViewSettings, host: str = "127.0.0.1", port: int = 0) -> None:
        self.settings = settings
        self.host = host
        self.app = make_app(settings)
        config = uvicorn.Config(
            self.app,
            host=host,
            port=port,
            log_level="warning",
            log_config=None,  # no handlers bound to this moment's sys.stderr (closed by later)
            access_log=False,
            lifespan="on",
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="assay-view", daemon=True)

    @property
    def port(self) -> int:
        sockets = self.server.servers[0].sockets if self.server.servers else []
        return int(sockets[0].getsockname()[1]) if sockets else 0

    @property
    def url(self) -> str:
        """The address to open (with ``?key=`` when a key is asked: the first visit keeps it in
        a cookie)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        key = f"?key={self.settings.key}" if self.settings.key else ""
        return f"http://{host}:{self.port}/{key}"

    def start(self, timeout_s: float = 20.0) -> ViewServer:
        self.thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise OSError(f"the view could not listen on {self.host}")
            time.sleep(0.01)
        return self

    def stop(self, grace_s: float = 1.0) -> None:
        """Stop serving: open event streams are given ``grace_s`` to end by themselves (a run
        just finished sends its ``end``), then closed, so uvicorn does not wait on them."""
        from assay.view.pages.live import close_streams

        close_streams(self.app, grace_s)
        self.server.should_exit = True
        self.thread.join(timeout=10)
        if self.thread.is_alive():  # a connection that would not close: closed now
            self.server.force_exit = True
            self.thread.join(timeout=10)
