"""A progress bar: tqdm when it is installed, else a plain one printed to a stream."""
from __future__ import annotations

import sys
import time


class _PlainBar:
    def __init__(self, total, desc, stream, width=30, unit="it"):
        self.total, self.desc, self.stream, self.width, self.unit = max(0, int(total)), desc, stream, width, unit
        self.n = 0
        self.start = time.perf_counter()
        self._last = -1.0
        self._draw(force=True)

    def update(self, k=1):
        self.n += k
        self._draw(force=self.n >= self.total)

    def _draw(self, force=False):
        now = time.perf_counter()
        if not force and now - self._last < 0.1:  # at most ten redraws a second
            return
        self._last = now
        frac = self.n / self.total if self.total else 1.0
        filled = int(round(frac * self.width))
        rate = self.n / (now - self.start) if now > self.start and self.n else 0.0
        self.stream.write(f"\r{self.desc} [{'#' * filled}{'.' * (self.width - filled)}] "
                          f"{self.n}/{self.total} {rate:.1f} {self.unit}s/s")
        self.stream.flush()

    def close(self):
        self._draw(force=True)
        self.stream.write("\n")
        self.stream.flush()


class _NoBar:
    def update(self, k=1):
        pass

    def close(self):
        pass


def progress_bar(total, desc="", enabled=True, stream=None, unit="frame"):
    """An object with ``update(k)`` and ``close()``; tqdm's when available."""
    if not enabled:
        return _NoBar()
    stream = stream or sys.stderr
    try:
        from tqdm import tqdm
    except ImportError:
        return _PlainBar(total, desc, stream, unit=unit)
    return tqdm(total=total, desc=desc, file=stream, unit=unit)
