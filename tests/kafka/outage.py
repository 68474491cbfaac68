"""A TCP proxy in front of a broker that can "take the broker down": drop every connection and refuse
new ones, then come back -- a broker outage as the client sees it, with the broker's data kept (the
test broker, Tansu, stores topics in memory only, so a real restart would also lose the data).

The broker must advertise the proxy's address (``TansuBroker(advertise_port=proxy.port)``) so that
clients reconnect through the proxy after they fetch metadata.
"""

from __future__ import annotations

import socket
import threading


class OutageProxy:
    def __init__(self, target_port: int, port: int) -> None:
        self.target = ("127.0.0.1", target_port)
        self.port = port
        self._up = threading.Event()
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._closed = False
        self.up()
        threading.Thread(target=self._serve, daemon=True).start()

    def down(self) -> None:
        """Drop every connection; refuse new ones (closed listening socket) until :meth:`up`."""
        self._up.clear()
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        with self._lock:
            for c in self._conns:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                c.close()
            self._conns.clear()

    def up(self) -> None:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(64)
        s.settimeout(0.2)
        self._listener = s
        self._up.set()

    def close(self) -> None:
        self._closed = True
        self.down()

    def _serve(self) -> None:
        while not self._closed:
            if not self._up.wait(0.2):
                continue
            s = self._listener
            if s is None:
                continue
            try:
                client, _ = s.accept()
            except (TimeoutError, OSError):
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.close()
            except OSError:
                pass
