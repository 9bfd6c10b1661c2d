"""Files the user names: read bounded and only when regular, written atomically, checked before work starts.

Input files (scenarios) are opened without blocking and refused unless they are regular files, so a FIFO,
a device or a socket cannot hang a command or fill memory; a file larger than the reader's cap is refused
from its size before it is read. Output files are checked before any work starts (the folder exists and is
writable, the path is not a folder or a special file), written to a temporary file in the same folder and
renamed over the target, so an existing file is replaced whole or not at all. Every failure is an
OutputError or the caller's own error type: one line, exit 2.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from launchbench.errors import LaunchbenchError


class OutputError(LaunchbenchError):
    """An output path that cannot be written."""


_KINDS = {
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
}


def describe_kind(mode: int) -> str:
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def os_reason(err: OSError) -> str:
    """An OSError as a short reason ('symbolic link loop', 'no space left on device', ...)."""
    if err.errno == errno.ELOOP:
        return "too many levels of symbolic links (a symlink loop?)"
    if err.errno == errno.ENOENT:
        return "no such file"
    return (err.strerror or str(err)).lower() if err.strerror else str(err)


def read_regular_file(path: Path, limit: int, error: Callable[[str], LaunchbenchError], what: str) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes; ``error(message)`` for anything else.

    Opened with O_NONBLOCK (a FIFO with no writer would block ``open``) and checked with fstat on the
    open descriptor, so what is read is what was checked."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except IsADirectoryError:
        raise error(f"is a directory, not {what}") from None
    except OSError as err:
        if err.errno == errno.ENOENT and os.path.islink(path):
            raise error("is a symbolic link to a file that does not exist") from None
        if err.errno == errno.ENOENT:
            raise error("no such file") from None
        raise error(f"cannot be read: {os_reason(err)}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise error(f"is a directory, not {what}")
        if not stat.S_ISREG(info.st_mode):
            raise error(
                f"is {describe_kind(info.st_mode)}, not a regular file; {what} must be a regular file"
            )
        if info.st_size > limit:
            raise error(f"file is larger than {_size(limit)} ({_size(info.st_size)}); not {what}")
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        total = 0
        while total <= limit:  # the file may grow after fstat: never read more than limit + 1 bytes
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as err:
        raise error(f"cannot be read: {os_reason(err)}") from None
    finally:
        os.close(fd)
    if total > limit:
        raise error(f"file is larger than {_size(limit)}; not {what}")
    return b"".join(chunks)


def _size(n: int) -> str:
    if n >= 1 << 20:
        return f"{n / (1 << 20):g} MiB"
    if n >= 1 << 10:
        return f"{n / (1 << 10):g} KiB"
    return f"{n} bytes"


def _stat_or_none(target: Path, where: str) -> os.stat_result | None:
    """``target``'s stat, None when it does not exist; OutputError when it cannot be looked at."""
    try:
        return os.stat(target)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise OutputError(f"{where}: {os_reason(err)}") from None


def check_output_file(path: str | Path, option: str) -> Path:
    """Refuse, before any work, an output file that cannot be written: its folder missing or not
    writable, or the path a folder or a special file. An existing regular file is fine (it is replaced)."""
    target = Path(path)
    where = f"{option} {target}"
    if str(path) == "" or target.name in ("", ".", ".."):
        raise OutputError(f"{where}: not a file name")
    info = _stat_or_none(target, where)
    if info is not None:
        if stat.S_ISDIR(info.st_mode):
            raise OutputError(f"{where}: is a directory; give a file name")
        if not stat.S_ISREG(info.st_mode):
            raise OutputError(
                f"{where}: is {describe_kind(info.st_mode)}; outputs are written to regular files only"
            )
    elif os.path.islink(target):
        raise OutputError(f"{where}: is a symbolic link to a file that does not exist")
    _check_folder(target.parent, where, "folder")
    return target


def check_output_dir(path: str | Path, option: str) -> Path:
    """Refuse, before any work, an output folder that cannot be made or written: a path that is a file,
    or whose nearest existing ancestor is not a writable folder. A missing folder passes when it can be
    made (the caller makes it, and documents that)."""
    target = Path(path)
    where = f"{option} {target}"
    info = _stat_or_none(target, where)
    if info is not None:
        if not stat.S_ISDIR(info.st_mode):
            raise OutputError(f"{where}: exists and is not a directory")
        if not os.access(target, os.W_OK | os.X_OK):
            raise OutputError(f"{where}: directory is not writable")
        return target
    ancestor = target.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        if ancestor.is_symlink() or os.path.lexists(ancestor):
            raise OutputError(f"{where}: {ancestor} is a broken symbolic link")
        ancestor = ancestor.parent
    _check_folder(ancestor, where, "nearest existing folder")
    return target


def _check_folder(folder: Path, where: str, what: str) -> None:
    folder = folder if str(folder) else Path(".")
    try:
        info = os.stat(folder)
    except FileNotFoundError:
        raise OutputError(
            f"{where}: folder {folder} does not exist (folders are not created for output files)"
        ) from None
    except OSError as err:
        raise OutputError(f"{where}: {folder}: {os_reason(err)}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise OutputError(f"{where}: {folder} is not a directory")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"{where}: {what} {folder} is not writable")


def atomic_write_bytes(path: Path, data: bytes, what: str = "") -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it over ``path``: readers see the
    old file or the new one, never a part. The folder must exist. Any OSError is an OutputError."""
    label = f"{what} {path}" if what else str(path)
    folder = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as err:
        raise OutputError(f"cannot write {label}: {os_reason(err)}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raise OutputError(f"cannot write {label}: {os_reason(err)}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str, what: str = "") -> None:
    atomic_write_bytes(path, text.encode("utf-8"), what)
