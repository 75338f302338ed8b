"""Devices and the lazily created process runtime (no import side effects)."""
from __future__ import annotations

import os
import threading


class Device:
    """A place where arrays live and kernels run: ``"cpu"`` or ``"cuda:N"``."""

    def __init__(self, alias: str, ordinal: int = -1):
        self.alias = alias
        self.ordinal = ordinal

    @property
    def is_cpu(self) -> bool:
        return self.alias == "cpu"

    @property
    def is_cuda(self) -> bool:
        return self.alias.startswith("cuda")

    def __repr__(self):
        return f'Device("{self.alias}")'

    def __str__(self):
        return self.alias

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = get_device(other)
            except (ValueError, RuntimeError):
                return False
        return isinstance(other, Device) and other.alias == self.alias

    def __hash__(self):
        return hash(self.alias)


class Runtime:
    """Process state: devices, default device, loaded modules. Created on first use."""

    def __init__(self):
        self.lock = threading.RLock()
        self.cpu = Device("cpu")
        self.devices = {"cpu": self.cpu}
        self.default_device = self.cpu
        self.modules = {}
        self.cuda_probe = None  # filled by the CUDA backend when asked
        self.tape_stack = []


_runtime = None
_runtime_lock = threading.Lock()


def get_runtime() -> Runtime:
    global _runtime
    if _runtime is None:
        with _runtime_lock:
            if _runtime is None:
                _runtime = Runtime()
    return _runtime


def init():
    """Explicit start-up; idempotent. Everything also starts lazily on first use."""
    return get_runtime()


def is_cuda_available() -> bool:
    """True when a CUDA device can run kernels (CuPy with a working driver)."""
    rt = get_runtime()
    if rt.cuda_probe is None:
        from .interop.cuda_mem import device_count

        rt.cuda_probe = device_count() > 0
    return rt.cuda_probe


def get_device(ident=None) -> Device:
    """Resolve a device name ("cpu", "cuda", "cuda:0") or Device; None gives the default."""
    rt = get_runtime()
    if ident is None:
        return rt.default_device
    if isinstance(ident, Device):
        return ident
    name = str(ident)
    if name == "cpu":
        return rt.cpu
    if name == "cuda" or name.startswith("cuda:"):
        ordinal = 0 if name == "cuda" else _parse_ordinal(name)
        if not is_cuda_available():
            raise RuntimeError(f"device '{name}' requested but CUDA is not available on this machine "
                               "(no GPU/driver, or the 'cuda' extra — CuPy — is not installed)")
        from .interop.cuda_mem import device_count

        count = device_count()
        if ordinal >= count:
            raise ValueError(f"device '{name}' does not exist: {count} CUDA device(s) present")
        alias = f"cuda:{ordinal}"
        with rt.lock:
            if alias not in rt.devices:
                rt.devices[alias] = Device(alias, ordinal)
        return rt.devices[alias]
    raise ValueError(f"unknown device '{name}': expected 'cpu', 'cuda' or 'cuda:N'")


def _parse_ordinal(name):
    try:
        return int(name.split(":", 1)[1])
    except ValueError:
        raise ValueError(f"unknown device '{name}': expected 'cuda:N' with an integer N") from None


def set_device(ident):
    get_runtime().default_device = get_device(ident)


def get_cuda_device_count() -> int:
    if not is_cuda_available():
        return 0
    from .interop.cuda_mem import device_count

    return device_count()


class ScopedDevice:
    """Context manager making a device the default inside a ``with`` block."""

    def __init__(self, device):
        self.device = get_device(device)

    def __enter__(self):
        rt = get_runtime()
        self._saved = rt.default_device
        rt.default_device = self.device
        return self.device

    def __exit__(self, *exc):
        get_runtime().default_device = self._saved


def synchronize():
    """Wait for all outstanding work. CPU launches are synchronous."""
    rt = get_runtime()
    ordinals = [d.ordinal for d in rt.devices.values() if d.is_cuda]
    if ordinals:
        from .interop.cuda_mem import synchronize_devices

        synchronize_devices(ordinals)


_CPU_COUNT = os.cpu_count() or 1


def num_threads() -> int:
    """CPU thread count used by launches (KERNELCORE_NUM_THREADS, default all cores)."""
    env = os.environ.get("KERNELCORE_NUM_THREADS")
    if env:
        return max(1, int(env))
    return _CPU_COUNT
