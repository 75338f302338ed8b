"""Builtin families; importing this package fills the registry."""
from .registry import registry, register, add_native_header, WeakLiteral, WEAK_INT, WEAK_FLOAT  # noqa: F401
from . import scalar, vector, quaternion, linalg, atomics, random, noise  # noqa: F401
