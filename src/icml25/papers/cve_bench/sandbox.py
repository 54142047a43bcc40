"""The process-level sandbox: a temporary folder, per-run secrets and a target process that cannot outlive us.

Official CVE-Bench isolates each target in Docker containers on their own network. Here a target is a
subprocess of the harness (:mod:`.target_apps`), bound to 127.0.0.1 on a free port, working inside a
``tempfile.TemporaryDirectory``, in its own session and process group (``start_new_session=True``) so that
stopping it kills the whole group. Three layers make sure no target survives the harness:

1. :class:`TargetProcess` is a context manager; leaving it (normally or by an exception) kills the group;
2. every live target is in a registry that an ``atexit`` hook and a SIGTERM/SIGHUP handler (installed only
   where the signal still has its default action) kill;
3. the target's own watchdog exits when its stdin pipe from the harness closes or its parent changes,
   which covers a harness killed with SIGKILL (no Python code of ours runs then).
"""

from __future__ import annotations

import atexit
import dataclasses
import json
import os
import secrets as _secrets
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from icml25.papers.cve_bench.target_apps import APPS, JailError, jail

TARGET_SCRIPT = Path(__file__).with_name("target_apps.py")


@dataclass(frozen=True)
class Secrets:
    """The secrets of one run (official: ADMIN_PASSWORD, OUTBOUND_SERVICE_REQUEST_CANARY, RCE_CANARY, the
    secret file and table contents; ours: fresh random values per run)."""

    admin_password: str
    file_secret: str
    db_secret: str
    outbound_canary: str
    rce_canary: str

    @classmethod
    def generate(cls) -> "Secrets":
        """New random secrets (``secrets.token_hex``): no two runs share one."""
        return cls(*(_secrets.token_hex(16) for _ in range(5)))

    def as_dict(self) -> dict[str, str]:
        return dataclasses.asdict(self)


class Sandbox:
    """A temporary folder that stands for the target's file system (``/srv/x`` lives at ``root/srv/x``)."""

    def __init__(self, prefix: str = "cvebench-") -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix=prefix)
        self.root = Path(self._tmp.name).resolve()

    def path(self, target_path: str) -> Path:
        """The sandbox file of the target's ``target_path``; ``ValueError`` when it would leave the sandbox."""
        try:
            return jail(self.root, target_path)
        except JailError as exc:
            raise ValueError(str(exc)) from None

    def cleanup(self) -> None:
        self._tmp.cleanup()

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc) -> None:
        self.cleanup()


_LIVE: dict[int, "TargetProcess"] = {}
_LIVE_LOCK = threading.Lock()
_HOOKS_INSTALLED = False


def live_targets() -> list[int]:
    """Process ids of the targets started by this process and not yet stopped."""
    with _LIVE_LOCK:
        return list(_LIVE)


def stop_all_targets(remove_sandboxes: bool = False) -> None:
    """Kill every live target's process group (the atexit and signal hooks call this); with
    ``remove_sandboxes`` also delete their sandbox folders (the signal hook: the process is about to die)."""
    with _LIVE_LOCK:
        procs = list(_LIVE.values())
    for proc in procs:
        proc.stop()
        if remove_sandboxes:
            proc.sandbox.cleanup()


def _install_hooks() -> None:
    global _HOOKS_INSTALLED
    if _HOOKS_INSTALLED:
        return
    _HOOKS_INSTALLED = True
    atexit.register(stop_all_targets)
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is signal.SIG_DFL:
            def handler(signum, frame, sig=sig):
                stop_all_targets(remove_sandboxes=True)
                signal.signal(sig, signal.SIG_DFL)
                os.kill(os.getpid(), sig)
            signal.signal(sig, handler)


class TargetProcess:
    """One toy application (:data:`.target_apps.APPS`) running on 127.0.0.1 inside ``sandbox``.

    Args:
        app: the application's name.
        sandbox: the folder it works in.
        secrets: the run's secrets.
        meta: the challenge metadata as a dict (paths, user names, secret table).
        allowed_fetch_ports: loopback ports the application may fetch from (the SSRF preview; its own port is
            always allowed).
        max_busy_s: cap of one expensive request (the resource-exhaustion app recovers after it).
        start_timeout_s: how long to wait for ``READY``.

    Use as a context manager; ``port`` is set once it is ready.
    """

    def __init__(self, app: str, sandbox: Sandbox, secrets: Secrets, meta: dict,
                 allowed_fetch_ports: tuple[int, ...] = (), max_busy_s: float = 10.0,
                 start_timeout_s: float = 20.0) -> None:
        if app not in APPS:
            raise ValueError(f"app must be one of {APPS}, got {app!r}")
        if not max_busy_s > 0:
            raise ValueError(f"max_busy_s must be > 0, got {max_busy_s!r}")
        self.app, self.sandbox, self.secrets, self.meta = app, sandbox, secrets, meta
        self.allowed_fetch_ports, self.max_busy_s, self.start_timeout_s = allowed_fetch_ports, max_busy_s, start_timeout_s
        self.proc: subprocess.Popen | None = None
        self.port: int | None = None

    def start(self) -> "TargetProcess":
        _install_hooks()
        cfg = dict(app=self.app, root=str(self.sandbox.root), secrets=self.secrets.as_dict(), meta=self.meta,
                   allowed_fetch_ports=list(self.allowed_fetch_ports), max_busy_s=self.max_busy_s)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
        self._stderr = tempfile.TemporaryFile()  # a pipe could fill up and block the target
        self.proc = subprocess.Popen([sys.executable, "-I", str(TARGET_SCRIPT)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._stderr, cwd=self.sandbox.root,
                                     env=env, start_new_session=True)
        with _LIVE_LOCK:
            _LIVE[self.proc.pid] = self
        try:
            self.proc.stdin.write((json.dumps(cfg) + "\n").encode())
            self.proc.stdin.flush()
            self.port = self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> int:
        deadline = time.monotonic() + self.start_timeout_s
        fd = self.proc.stdout.fileno()
        buf = b""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                chunk = os.read(fd, 256)
                if not chunk:
                    break
                buf += chunk
                if b"\n" in buf:
                    line = buf.split(b"\n", 1)[0].decode()
                    if line.startswith("READY "):
                        return int(line.split()[1])
                    break
            elif self.proc.poll() is not None:
                break
        err = b""
        if self.proc.poll() is not None:
            self._stderr.seek(0)
            err = self._stderr.read()
        raise RuntimeError(f"target {self.app!r} did not start: {err.decode(errors='replace')[-500:] or buf!r}")

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, grace_s: float = 2.0) -> None:
        """Kill the target's process group (SIGTERM, then SIGKILL after ``grace_s``) and reap it."""
        proc = self.proc
        if proc is None:
            return
        with _LIVE_LOCK:
            _LIVE.pop(proc.pid, None)
        for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # anything left in the group
        except (ProcessLookupError, PermissionError):
            pass
        for stream in (proc.stdin, proc.stdout, getattr(self, "_stderr", None)):
            try:
                stream.close()
            except (OSError, AttributeError):
                pass

    def __enter__(self) -> "TargetProcess":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
