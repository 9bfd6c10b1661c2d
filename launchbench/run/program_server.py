"""A fork server for workers started as programs: ab's workers, in each variant's own interpreter.

ab starts its workers with the variant's interpreter, paths and environment (launchbench.run.ab), so
they cannot be forked from the runner's fork server (launchbench.run.worker_start), which runs this
interpreter. Instead each side gets a server of its own: ``python -m launchbench.run.program_server FD
FACTORY``, started once with exactly the interpreter and environment its workers were started with,
imports what every worker imports (launchbench.run.fork_prelude: the worker's modules and CuPy, no CUDA
call) and the backend factory's module, then waits. Each worker is a fork of it
(``ProgramServer.fork``): a process of its own, with its own CUDA context, NVML handle and host level,
that begins with the imports done (a spawned interpreter took 0.4–0.5 s of imports on the 2-core CPU
machine before its first message, and CuPy's import on top where it runs on a GPU).

Over the socket pair FD (the parent's control socket): the parent sends each request as the device
index (8 bytes) with two file descriptors, the worker's end of its socket pair and the write end of a
status pipe; the server forks, the child takes on the environment the server started with (fork_prelude's
one-BLAS-thread setting undone) and runs ``worker.serve_program``, and the server answers
with the child's pid. When a child ends the server writes its exit code (4 bytes, negative for a
signal, as ``subprocess.Popen.returncode``) to the child's status pipe: ``ServedChild`` reads it there.
The server ends when the control socket closes. Where the platform cannot fork, or the server does not
answer, ab spawns its workers as before (launchbench.run.ab.VariantWorkers)."""

from __future__ import annotations

import contextlib
import os
import select
import selectors
import signal
import socket
import struct
import subprocess
import sys
import threading
import traceback
from collections.abc import Mapping
from multiprocessing.connection import Connection
from typing import NoReturn

from launchbench.run.worker import serve_program

SERVER_MODULE = "launchbench.run.program_server"
ANSWER_TIMEOUT_S = 180.0  # a server that has not answered by then (its imports hung) is given up on
_DEVICE = struct.Struct("<q")
_PID = struct.Struct("<q")
_CODE = struct.Struct("<i")
UNKNOWN_EXIT = -1  # the exit code of a child whose server ended before it did, or could not reap it


def platform_can_serve() -> bool:
    """Whether this platform can run the server (fork, and file descriptors sent over sockets)."""
    return hasattr(os, "fork") and hasattr(socket, "send_fds")


class ServedChild:
    """A worker forked by a ProgramServer, with the interface WorkerProcess uses (is_alive, exitcode,
    join, kill): its exit code comes over its status pipe."""

    def __init__(self, pid: int, status_fd: int):
        self.pid = pid
        self._status: int | None = status_fd  # None once read (or its server ended)
        self._code: int | None = None

    def _poll(self, timeout: float) -> None:
        if self._code is not None:
            return
        if self._status is None:  # the server ended first: whether the child lives is all there is to know
            self._code = None if _exists(self.pid) else UNKNOWN_EXIT
            return
        if not select.select([self._status], [], [], max(0.0, timeout))[0]:
            return
        data = os.read(self._status, _CODE.size)
        os.close(self._status)
        self._status = None
        if len(data) == _CODE.size:
            self._code = _CODE.unpack(data)[0]
        else:
            self._poll(0.0)

    def is_alive(self) -> bool:
        self._poll(0.0)
        return self._code is None

    @property
    def exitcode(self) -> int | None:
        self._poll(0.0)
        return self._code

    def join(self, timeout: float) -> None:
        self._poll(timeout)

    def kill(self) -> None:
        if self.is_alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)

    def __del__(self) -> None:
        if self._status is not None:
            with contextlib.suppress(OSError):
                os.close(self._status)


def _exists(pid: int) -> bool:
    """Whether process ``pid`` still runs: it exists and is not a zombie. An orphaned child that ended
    stays a zombie until its new parent reaps it, which a container's init may do late or never."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process under that pid: it exists
        pass
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """Whether ``pid`` has ended and waits to be reaped (read from /proc; False where there is none)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return False
    state = stat.rfind(b")") + 2  # the state follows "pid (comm) "
    return stat[state : state + 1] == b"Z"


class ProgramServer:
    """The parent's side: a server started with ``interpreter`` and ``env`` for workers of the backend
    factory ``factory`` ("module:function"); ``fork`` starts one worker, ``close`` ends the server."""

    def __init__(self, interpreter: str, env: Mapping[str, str], factory: str):
        ours, theirs = socket.socketpair()
        command = [interpreter, "-m", SERVER_MODULE, str(theirs.fileno()), factory]
        try:
            self.popen = subprocess.Popen(
                command, env=dict(env), pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL
            )
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.settimeout(ANSWER_TIMEOUT_S)
        self.control = ours
        self._lock = threading.Lock()

    def fork(self, device: int) -> tuple[Connection, ServedChild]:
        """A new worker for ``device``: the parent's end of its socket pair and the child; OSError where
        the server is gone or did not answer in ANSWER_TIMEOUT_S."""
        ours, theirs = socket.socketpair()
        status_read, status_write = os.pipe()
        try:
            with self._lock:
                socket.send_fds(self.control, [_DEVICE.pack(device)], [theirs.fileno(), status_write])
                pid = _PID.unpack(_receive(self.control, _PID.size))[0]
        except BaseException:
            ours.close()
            os.close(status_read)
            raise
        finally:
            theirs.close()
            os.close(status_write)
        return Connection(ours.detach()), ServedChild(pid, status_read)

    def close(self) -> None:
        """End the server (its running children go on: their parent stops them)."""
        self.control.close()
        try:
            self.popen.wait(5)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(5)


def _receive(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the program server ended")
        data += chunk
    return data


def main(argv: list[str] | None = None) -> NoReturn:
    """The server (``python -m launchbench.run.program_server FD FACTORY``)."""
    fd, factory = argv if argv is not None else sys.argv[1:]
    environ = dict(os.environ)  # the workers' environment, before fork_prelude's one-BLAS-thread setting
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what an interrupt means
    control = socket.socket(fileno=int(fd))
    _preload(factory)
    _serve(control, environ, factory)
    os._exit(0)


def _preload(factory: str) -> None:
    """What every worker imports, and the factory's module (a failure is the worker's to report)."""
    import importlib

    import launchbench.run.fork_prelude  # noqa: F401

    with contextlib.suppress(Exception):
        importlib.import_module(factory.partition(":")[0])


def _serve(control: socket.socket, environ: dict[str, str], factory: str) -> None:
    """Fork a worker for every request, write each child's exit code as it ends; return once the
    control socket closes."""
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: dict[int, int] = {}  # pid → the write end of its status pipe
    selector = selectors.DefaultSelector()
    selector.register(control, selectors.EVENT_READ)
    selector.register(wake_read, selectors.EVENT_READ)
    while True:
        for key, _ in selector.select():
            if key.fileobj == wake_read:
                os.read(wake_read, 4096)
            elif not _answer(control, environ, factory, children, (wake_read, wake_write)):
                return
        _reap(children)


def _answer(
    control: socket.socket,
    environ: dict[str, str],
    factory: str,
    children: dict[int, int],
    own: tuple[int, int],
) -> bool:
    """One request: a worker forked, its pid sent; False once the control socket has closed."""
    try:
        message, fds, _, _ = socket.recv_fds(control, _DEVICE.size, 2)
    except OSError:
        return False
    if len(message) < _DEVICE.size or len(fds) != 2:
        for stray in fds:
            os.close(stray)
        return False
    worker_fd, status_fd = fds
    device = _DEVICE.unpack(message)[0]
    pid = os.fork()
    if pid == 0:
        closing = [control.fileno(), status_fd, *own, *children.values()]
        _child(worker_fd, closing, environ, factory, device)
    os.close(worker_fd)
    children[pid] = status_fd
    control.sendall(_PID.pack(pid))
    return True


def _child(
    worker_fd: int, closing: list[int], environ: dict[str, str], factory: str, device: int
) -> NoReturn:
    """The forked worker: the server's descriptors closed, its signal handling undone, the environment
    it started with, then the worker's own loop (which ends the process)."""
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in closing:
            with contextlib.suppress(OSError):
                os.close(fd)
        os.environ.clear()
        os.environ.update(environ)
        serve_program(worker_fd, factory, device)
    except BaseException:  # as a spawned worker's uncaught error: its traceback, exit code 1
        traceback.print_exc()
        sys.stderr.flush()
    os._exit(1)


def _reap(children: dict[int, int]) -> None:
    """Every ended child's exit code written to its status pipe."""
    for pid in list(children):
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
            code = os.waitstatus_to_exitcode(status) if done else None
        except ChildProcessError:  # reaped elsewhere: its code is not known
            code = UNKNOWN_EXIT
        if code is None:
            continue
        status_fd = children.pop(pid)
        with contextlib.suppress(OSError):
            os.write(status_fd, _CODE.pack(code))
        os.close(status_fd)


if __name__ == "__main__":
    main()
