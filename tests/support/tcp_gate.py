"""A loopback TCP forwarder that can be opened late: the telemetry cluster "coming back".

Before ``open()`` the port is closed (connections are refused, as for a cluster that is
away); after it, connections are forwarded to the real broker. Only the bootstrap goes
through the gate: the broker then advertises its own address.
"""
from __future__ import annotations

import socket
import threading


class TcpGate:
    def __init__(self, port: int, target: tuple[str, int]) -> None:
        self.port = port
        self.target = target
        self._listener: socket.socket | None = None
        self._sockets: list[socket.socket] = []
        self._closed = threading.Event()

    def open(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        assert self._listener is not None
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target)
            except OSError:  # the broker went away (end of session): refuse, as a dead cluster would
                client.close()
                continue
            self._sockets += [client, upstream]
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self._closed.set()
        for s in [self._listener, *self._sockets]:
            if s is not None:
                s.close()
