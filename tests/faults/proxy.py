"""A TCP proxy of the tests' own between wrighty and its PostgreSQL server, to make the
network fail the ways a real one does: packets that stop without an error (freeze), a server
that refuses connections (refuse), connections cut (cut), and a connection whose client stops
being forwarded after a given statement went through (hold_after: a COMMIT that never arrives,
leaving the server's session idle in transaction with its row locks).

Frozen or held bytes are read by nobody: the proxy's kernel acknowledges what the client sends,
so neither TCP keepalives nor a TCP user timeout notice anything, as behind a stateful
firewall that black-holes a flow. Only wrighty's own deadlines can.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
from dataclasses import dataclass, field

POLL_SECONDS = 0.02


@dataclass
class _Pair:
    client: socket.socket
    server: socket.socket
    held_up: bool = False  # client -> server stopped (hold_after matched)
    closed: bool = False
    sent_up: bytearray = field(default_factory=bytearray)


class FaultProxy:
    """Listens on 127.0.0.1 (``port``) and forwards each connection to ``target``."""

    def __init__(self, target: tuple[str, int] = ("127.0.0.1", 5432)) -> None:
        self.target = target
        self._lock = threading.Lock()
        self._pairs: list[_Pair] = []
        self._frozen = False
        self._hold_marker: bytes | None = None
        self._stopped = threading.Event()
        self._listener: socket.socket | None = None
        self.port = 0
        self._listen()
        self.connections = 0  # accepted so far

    # -- the faults -------------------------------------------------------------------------

    def forward(self) -> None:
        """Back to normal: forward everything (held connections stay held: a real half-dead
        connection does not come back), and accept connections again."""
        with self._lock:
            self._frozen = False
            self._hold_marker = None
        if self._listener is None:
            self._listen()

    def freeze(self) -> None:
        """Stop forwarding in both directions, on every connection, without a word."""
        with self._lock:
            self._frozen = True

    def refuse(self) -> None:
        """Refuse new connections (nothing listens on the port) and cut the open ones."""
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept()
            listener.close()
        self.cut()

    def cut(self) -> None:
        """Reset every open connection."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            _reset(pair.client)
            _reset(pair.server)
            pair.closed = True

    def hold_after(self, marker: bytes) -> None:
        """From now on, once a connection has forwarded client bytes containing ``marker``,
        forward nothing more from that client (the server's answers still come back)."""
        with self._lock:
            self._hold_marker = marker

    def held(self) -> int:
        """How many connections are held."""
        with self._lock:
            return sum(1 for pair in self._pairs if pair.held_up)

    def close(self) -> None:
        self._stopped.set()
        self.refuse()

    # -- plumbing ---------------------------------------------------------------------------

    def _listen(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed: refusing
            try:
                server = socket.create_connection(self.target, timeout=5)
            except OSError:
                _reset(client)
                continue
            server.settimeout(None)
            pair = _Pair(client, server)
            with self._lock:
                self._pairs.append(pair)
                self.connections += 1
            threading.Thread(target=self._pump, args=(pair,), daemon=True).start()

    def _pump(self, pair: _Pair) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(pair.client, selectors.EVENT_READ, "up")
            selector.register(pair.server, selectors.EVENT_READ, "down")
            while not pair.closed and not self._stopped.is_set():
                with self._lock:
                    frozen = self._frozen
                    marker = self._hold_marker
                for key, _ in selector.select(POLL_SECONDS):
                    if frozen or (key.data == "up" and pair.held_up):
                        continue  # left unread: the kernel's buffers fill, nothing says why
                    source = pair.client if key.data == "up" else pair.server
                    sink = pair.server if key.data == "up" else pair.client
                    try:
                        data = source.recv(65536)
                        if data:
                            sink.sendall(data)
                    except OSError:
                        data = b""
                    if not data:
                        self._close(pair)
                        return
                    if key.data == "up" and marker is not None:
                        pair.sent_up += data
                        if marker in pair.sent_up:
                            pair.held_up = True
                        del pair.sent_up[: max(0, len(pair.sent_up) - len(marker))]
                if frozen or pair.held_up:
                    self._stopped.wait(POLL_SECONDS)

    def _close(self, pair: _Pair) -> None:
        pair.closed = True
        for end in (pair.client, pair.server):
            with contextlib.suppress(OSError):
                end.close()
        with self._lock, contextlib.suppress(ValueError):
            self._pairs.remove(pair)


def _reset(end: socket.socket) -> None:
    """Close with a RST rather than a FIN, as a dropped connection does."""
    with contextlib.suppress(OSError):
        end.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    with contextlib.suppress(OSError):
        end.close()
