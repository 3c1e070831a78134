"""One writer per lake: a run takes the lake's lock before it writes, and a second run started
meanwhile waits for it (``--lock-wait`` seconds) or stops with one line naming the holder.

Why a lock and not Delta's optimistic concurrency alone: Delta refuses a commit only when it
conflicts with one it did not see, and most of the stages' commits do not conflict in Delta's
sense (two appends of the same validation batch, two ``replaceWhere`` of the same groups both
succeed), so two runs of one stage would both write: the second replays what the first did,
bronze gets the same records twice when the two ingests planned from different versions, and
the stage marks race. One run at a time makes every stage's "read the mark, write, move the
mark" a unit.

How: ``fcntl.flock`` on ``<lake>/_lock``, held by the process for the whole run. The kernel
drops it when the process ends, however it ends (a SIGKILLed run leaves no stale lock to
clean up), and the lake's folder is the one place every run on that lake already shares. The
holder writes who it is into the file (pid, host, command, since when) for the loser's message.
Re-entrant within a process (``run_pipeline`` holds it around each ``run_stage``, which takes it
again), so it serialises processes, not threads.

Limits: a lake on an object store or HDFS (``s3a://``, ``hdfs://``) has no file to lock: the
lock is then a file under the cache root named after the lake, which serialises the runs of
one machine only. Runs on several machines need one scheduler (the DAGs run with
``max_active_runs=1``). Network file systems honour ``flock`` only as far as their locking
does (NFSv4 does; some FUSE mounts do not).
"""
from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from lens_runtime.errors import LensError
from lens_runtime.paths import home

LOCK_NAME = "_lock"
POLL_S = 0.2
_held: dict[str, tuple[int, int]] = {}  # lock file -> (open fd, depth) for the locks this process holds
_guard = threading.Lock()


def lock_file(lake_path: str) -> Path:
    """The file whose lock stands for the lake: in the lake's folder, or under the cache root
    for a lake that is not a local folder."""
    if "://" in lake_path and not lake_path.startswith("file://"):
        digest = hashlib.sha256(lake_path.rstrip("/").encode()).hexdigest()[:16]
        return home() / "locks" / f"lake-{digest}.lock"
    local = lake_path.removeprefix("file://")
    return Path(local) / LOCK_NAME


def _holder() -> str:
    """Who holds the lock, as the loser's message names it."""
    command = " ".join(Path(a).name if i == 0 else a for i, a in enumerate(sys.argv))
    if len(command) > 200:  # a long command line is cut, visibly
        command = command[:199] + "…"
    since = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"pid {os.getpid()} on {socket.gethostname()}, `{command}`, since {since}"


def _try(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError as err:
        if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise


@contextmanager
def locked(lake_path: str, wait_s: float = 0.0) -> Iterator[None]:
    """Hold the lake's lock for the block; wait up to ``wait_s`` seconds for another process's
    run to release it, then raise a one-line ``LensError`` naming the holder."""
    path = lock_file(lake_path)
    key = str(path)
    with _guard:
        if key in _held:
            fd, depth = _held[key]
            _held[key] = (fd, depth + 1)
            reentered = True
        else:
            reentered = False
    if not reentered:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + max(0.0, wait_s)
        while not _try(fd):
            if time.monotonic() >= deadline:
                os.close(fd)
                holder = path.read_text(errors="replace").strip() or "another process"
                waited = f" (waited {wait_s:g} s)" if wait_s > 0 else ""
                raise LensError(f"the lake {lake_path} is in use by another run: {holder}{waited}. Wait for it to "
                                f"end, or pass --lock-wait SECONDS (LENS_LOCK_WAIT_S) to queue behind it")
            time.sleep(POLL_S)
        os.ftruncate(fd, 0)
        os.pwrite(fd, (_holder() + "\n").encode(), 0)
        with _guard:
            _held[key] = (fd, 1)
    try:
        yield
    finally:
        with _guard:
            fd, depth = _held[key]
            if depth > 1:
                _held[key] = (fd, depth - 1)
            else:
                del _held[key]
                os.ftruncate(fd, 0)  # no holder named once it is free
                os.close(fd)  # closing the descriptor releases the lock
