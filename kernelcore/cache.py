"""On-disk kernel cache, content-addressed and safe under concurrent processes.

Entries are written to a temporary name and renamed into place (atomic on POSIX), so
several processes may build the same module at once.  Each binary has a sidecar with
its SHA-256; an entry whose binary does not match (truncated, corrupted) is rebuilt.

Many processes starting cold at once (a parameter sweep's workers) would otherwise all
compile the same module, and a reader could see one writer's binary beside another
writer's digest (compilers need not be byte-reproducible) and delete a good entry that a
third process is about to load.  So building, publishing and removing an entry happen
under a per-entry lock file (``fcntl.flock``, released by the OS if a process dies); a
process that waited for the lock finds the entry built and loads it instead of compiling.
Where ``fcntl`` is missing (Windows) the lock is a no-op and the atomic renames remain.

Keys hash the generated source with the checkout's directory left out of its file names
(:func:`portable_source`), so two clones or worktrees of one commit share their entries.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
from contextlib import contextmanager

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

from .version import __version__


def cache_dir() -> str:
    d = os.environ.get("KERNELCORE_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "kernelcore", __version__)
    os.makedirs(d, exist_ok=True)
    return d


def clear_kernel_cache():
    """Delete every cached module binary."""
    d = cache_dir()
    for name in os.listdir(d):
        p = os.path.join(d, name)
        if os.path.isdir(p):
            shutil.rmtree(p, ignore_errors=True)
        else:
            try:
                os.remove(p)
            except OSError:
                pass


def file_digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# the file names the emitters write into generated code: #line directives (the kernel's Python
# file) and #include of registered native headers (absolute paths)
_QUOTED_PATH = re.compile(r'^(#line \d+ |#include )"([^"\n]+)"', re.M)


def portable_source(text: str) -> str:
    """Generated C++/CUDA ``text`` as a cache key hashes it: each absolute file name of its ``#line``
    and ``#include`` directives made relative to the longest ``sys.path`` entry holding it
    (``"/work/wt/a/sim/x.py"`` -> ``"<path>/sim/x.py"``), so that the same commit checked out in two
    directories gives one key.  Only the directory is left out: two files of different names or
    packages, or any other difference in the code, still give different texts; a file outside every
    ``sys.path`` entry keeps its full name (a different key, never a shared wrong one).  The headers'
    contents are hashed beside this (module.Module._cache_key), so equal keys compile equal code."""
    roots = sorted({os.path.abspath(p) for p in sys.path if isinstance(p, str)}, key=len, reverse=True)
    seen = {}

    def relative(m):
        path = m.group(2)
        if path not in seen:
            seen[path] = path
            for r in roots:
                if path.startswith(r.rstrip(os.sep) + os.sep):
                    seen[path] = "<path>" + os.sep + path[len(r.rstrip(os.sep)) + 1:]
                    break
        return f'{m.group(1)}"{seen[path]}"'

    return _QUOTED_PATH.sub(relative, text)


def entry_paths(key: str, ext: str):
    d = cache_dir()
    return os.path.join(d, f"{key}{ext}"), os.path.join(d, f"{key}{ext}.sha256"), os.path.join(d, f"{key}.cpp")


@contextmanager
def entry_lock(key: str):
    """Hold the exclusive lock of cache entry ``key`` (across processes) for the block."""
    if fcntl is None:  # pragma: no cover - Windows
        yield
        return
    fd = os.open(os.path.join(cache_dir(), f"{key}.lock"), os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock; the lock file stays (tiny, reused)


def entry_busy(key: str) -> bool:
    """True while some process holds the lock of cache entry ``key`` (it is building it now)."""
    if fcntl is None:  # pragma: no cover - Windows
        return False
    fd = os.open(os.path.join(cache_dir(), f"{key}.lock"), os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # releases the probe's lock at once
    return False


def build_each_once(items, key_of, build) -> list:
    """``[build(item) for item in items]``, but an item whose cache entry ``key_of(item)`` another
    process is building right now is put off until the free ones are done.

    Processes that share items (two pytest-xdist workers checking the same kernel modules) would
    otherwise queue on the same entry lock one behind the other; this way they build different
    entries at once, and a put-off item is usually found built by the time it comes round again
    (``build`` is expected to go through ``store``, which waits for the lock and loads the entry).
    Every item is still built or loaded by this process before it returns: nothing is skipped.
    """
    results = [None] * len(items)
    todo = list(range(len(items)))
    while todo:
        later = []
        for i in todo:
            if entry_busy(key_of(items[i])):
                later.append(i)
            else:
                results[i] = build(items[i])
        if len(later) == len(todo):  # all busy elsewhere: wait for the first (store blocks on its lock)
            results[later[0]] = build(items[later[0]])
            later = later[1:]
        todo = later
    return results


def _valid(binary: str, digest: str) -> bool:
    try:
        with open(digest) as f:
            expected = f.read().strip()
        return file_digest(binary) == expected
    except OSError:
        return False


def lookup(key: str, ext: str) -> str | None:
    """Path of a valid cached binary, or None (missing or corrupted entries are removed)."""
    binary, digest, _ = entry_paths(key, ext)
    if not (os.path.exists(binary) and os.path.exists(digest)):
        return None
    if _valid(binary, digest):
        return binary
    with entry_lock(key):  # a writer may be between its two renames: decide under its lock
        if _valid(binary, digest):
            return binary
        for p in (binary, digest):
            try:
                os.remove(p)
            except OSError:
                pass
    return None


def store(key: str, ext: str, build) -> str:
    """Build into a temporary file with build(tmp_path), then publish binary and digest atomically.

    Under the entry's lock: a process that waited while another built the same entry
    returns that entry without building (one compile per entry, however many processes)."""
    binary, digest, _ = entry_paths(key, ext)
    d = os.path.dirname(binary)
    with entry_lock(key):
        if os.path.exists(binary) and os.path.exists(digest) and _valid(binary, digest):
            return binary
        fd, tmp = tempfile.mkstemp(dir=d, prefix=f".{key}.", suffix=ext)
        os.close(fd)
        try:
            build(tmp)
            dig = file_digest(tmp)
            fd2, tmpd = tempfile.mkstemp(dir=d, prefix=f".{key}.", suffix=".sha256")
            with os.fdopen(fd2, "w") as f:
                f.write(dig)
            os.replace(tmp, binary)
            os.replace(tmpd, digest)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    return binary


def write_source(key: str, text: str) -> str:
    _, _, src = entry_paths(key, "")
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(src), prefix=f".{key}.", suffix=".cpp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, src)
    return src
