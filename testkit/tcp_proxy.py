"""A TCP proxy a test controls, between the service and a database: `cut()` drops every
connection and refuses new ones (the database is down), `hang()` keeps connections open and
forwards nothing (the database is hung), `restore()` brings it back on the same port."""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from types import TracebackType
from urllib.parse import urlsplit, urlunsplit

logger = logging.getLogger(__name__)
_POLL_S = 0.1


class TcpProxy:
    """Forwards 127.0.0.1:`port` to `target` while up."""

    @classmethod
    def before(cls, url: str) -> TcpProxy:
        """A proxy in front of the server `url` (a database URL) names."""
        parts = urlsplit(url)
        return cls(parts.hostname or "127.0.0.1", parts.port or 5432)

    def through(self, url: str) -> str:
        """`url` with this proxy in place of its host and port."""
        parts = urlsplit(url)
        user = f"{parts.username}@" if parts.username else ""
        return urlunsplit(parts._replace(netloc=f"{user}127.0.0.1:{self.port}"))

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self._listener: socket.socket | None = None
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._flowing = threading.Event()
        self._up = threading.Event()

    def __enter__(self) -> TcpProxy:
        self.restore()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.cut()

    def restore(self) -> None:
        """Listen (again, on the same port) and forward."""
        self._flowing.set()
        if self._listener is not None:  # it was hung, not cut
            return
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        listener.settimeout(_POLL_S)
        self.port = listener.getsockname()[1]
        self._listener = listener
        self._up.set()
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        """Close every connection and stop listening: connecting is refused."""
        self._up.clear()
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        with self._lock:
            sockets, self._sockets = self._sockets, set()
        for sock in sockets:
            _close(sock)

    def hang(self) -> None:
        """Accept and hold connections, forwarding nothing either way."""
        self._flowing.clear()

    def _accept(self, listener: socket.socket) -> None:
        while self._up.is_set() and self._listener is listener:
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                _close(client)
                continue
            with self._lock:
                self._sockets |= {client, upstream}
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        source.settimeout(_POLL_S)
        while True:
            try:
                data = source.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                break
            if not data:
                break
            while not self._flowing.wait(_POLL_S) and self._up.is_set():
                pass  # hung: hold the data until the proxy flows again or is cut
            try:
                sink.sendall(data)
            except OSError:
                break
        _close(source)
        _close(sink)


def _close(sock: socket.socket) -> None:
    # A socket the other side already closed cannot be shut down; it is closed all the same.
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
