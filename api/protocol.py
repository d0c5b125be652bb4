"""Slow clients, bounded in `anchor serve` itself: the service must not depend on a proxy
in front of it to survive a slowloris.

uvicorn arms no timer until a request's headers are complete, so a connection that sends half its
headers and waits held a file descriptor forever; 20,000 of them refused every other connection.
This protocol (uvicorn's httptools one, extended) adds:

- a **header deadline** (ANCHOR_API_HEADER_TIMEOUT_S, default 10 s): a connection whose request
  headers are not complete that long after it opened (or after its previous response) is closed;
- a **connection cap** (ANCHOR_API_MAX_CONNECTIONS, default 1,024, never above the open-file limit
  less a margin): past it, the connection that has waited longest without complete headers is
  closed to make room (an honest client's headers arrive in milliseconds, so it is the slow ones
  that go); if none is, the one whose request body has waited longest without a byte (a client
  that promised a body and stopped sending; an honest upload is never idle for long); only if no
  connection waits for either is the new one refused.

The body deadline (ANCHOR_API_BODY_TIMEOUT_S, default 30 s without a byte) is the edge guard's
(api.limits.RequestGuard): it sees the body as the application reads it.
"""

from __future__ import annotations

import asyncio
import resource
from collections import OrderedDict
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

_FD_MARGIN = 64


def _config(app: Any) -> Any:
    """The served app's configuration (api.config.ApiConfig, which `create_app` built from the settings
    model), or its defaults for an app made without one: uvicorn makes this protocol from a name, so
    the configuration comes with the app it serves, not as an argument."""
    from api.config import ApiConfig

    return getattr(getattr(app, "state", None), "config", None) or ApiConfig()


def max_connections(wanted: int) -> int:
    """The cap, never more than the open-file limit allows (each connection is a descriptor)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(16, min(wanted, soft - _FD_MARGIN)) if soft != resource.RLIM_INFINITY else wanted


_waiting: OrderedDict[int, DeadlineProtocol] = OrderedDict()
"""Connections without complete request headers, oldest first (one event loop per worker)."""
_in_body: OrderedDict[int, DeadlineProtocol] = OrderedDict()
"""Connections whose request body is not complete, by the time of its last byte, oldest first."""


class DeadlineProtocol(HttpToolsProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        config = _config(self.config.app)
        self._header_s = float(config.header_timeout_s)
        self._cap = max_connections(config.max_connections)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self._cap:
            oldest = next(iter(_waiting.values()), None) or next(iter(_in_body.values()), None)
            if oldest is None:
                transport.close()  # every connection is busy with a request: this one waits its turn outside
                return
            oldest._too_slow()  # its app sees the client gone (http.disconnect), as for any dropped upload
        self._arm()

    def _arm(self) -> None:
        if self._deadline is None:
            self._deadline = self.loop.call_later(self._header_s, self._too_slow)
            _waiting[id(self)] = self

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        _waiting.pop(id(self), None)
        _in_body.pop(id(self), None)

    def _too_slow(self) -> None:
        self._disarm()
        if not self.transport.is_closing():
            self.transport.close()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm()  # a keep-alive connection's next request: its headers have the same deadline

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()
        _in_body[id(self)] = self  # until the message is complete (a GET's is at once)

    def on_body(self, body: bytes) -> None:
        super().on_body(body)
        if id(self) in _in_body:
            _in_body.move_to_end(id(self))  # a byte arrived: the most recently active

    def on_message_complete(self) -> None:
        _in_body.pop(id(self), None)
        super().on_message_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)
