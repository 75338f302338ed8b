"""Exceptions that point at the user's code."""
from __future__ import annotations


class KernelCompileError(Exception):
    """A kernel or function the compiler cannot handle: names the kernel, file:line and source line."""

    def __init__(self, message, kernel=None, filename=None, lineno=None, source_line=None):
        self.message = message
        self.kernel = kernel
        self.filename = filename
        self.lineno = lineno
        self.source_line = source_line
        where = f'{filename}:{lineno}' if filename else "<unknown>"
        text = f"{message}\n  in kernel/function '{kernel}' at {where}"
        if source_line:
            text += f"\n    {source_line.strip()}"
        super().__init__(text)


class NativeBuildError(RuntimeError):
    """The C++/CUDA compiler failed on generated code (a kernelcore bug or a bad func_native)."""

    def __init__(self, module, log, source_path):
        self.log = log
        self.source_path = source_path
        first = next((l for l in log.splitlines() if "error" in l), log.splitlines()[0] if log else "")
        super().__init__(f"native build of module '{module}' failed: {first.strip()}\n"
                         f"  generated source: {source_path}\n  (set kc.config.verbose = True for the full compiler output)")
        self.full_log = log


class KernelRuntimeError(RuntimeError):
    """An error detected while a kernel ran (debug-mode bounds check, ...)."""


# ---- assert statements in kernels: the id a failed check records -> what to report ---------------
# The id is derived from the statement (file, line, text), not from a counter, so that the
# generated code, which contains it, is the same in every process (the kernel cache keys on it).
_assertions: dict[int, tuple] = {}


def register_assertion(filename: str, lineno: int, text: str, message: str | None) -> int:
    """Id (a positive int32) of the ``assert`` at filename:lineno, remembered for the report."""
    import zlib

    key = f"{filename}:{lineno}:{text}:{message}"
    aid = zlib.crc32(key.encode()) & 0x7FFFFFFF
    _assertions[aid] = (filename, lineno, text, message)
    return aid


def assertion_report(aid: int):
    """(filename, lineno, statement text, message or None) of a registered assert, or None."""
    return _assertions.get(aid)
