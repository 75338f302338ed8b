"""geometry: spatial structures on kernelcore — HashGrid, Bvh, Mesh, Volume, marching cubes.

Importing this package adds the structures' builtins (``hash_grid_query``,
``mesh_query_point``, ``volume_sample_f``, ...) to kernelcore's builtin table, so kernels
call them as ``kc.<name>(...)``; the Python classes pass their ``id`` to kernels as a
``kc.uint64``. The classes are also reachable as ``kc.HashGrid``, ``kc.Mesh``, ``kc.Bvh``,
``kc.Volume`` (``kc.Volume.LINEAR`` inside kernels), ``kc.MeshQueryPoint`` and
``kc.MeshQueryRay`` for code ported from the seeds with ``wp`` replaced by ``kc``.
"""
import kernelcore as _kc

from . import builtins as _builtins  # noqa: F401  (fills the builtin table)
from .query_types import MeshQueryPoint, MeshQueryRay
from .hash_grid import HashGrid
from .bvh import Bvh
from .mesh import Mesh
from .volume import Volume
from .marching_cubes import marching_cubes

__all__ = ["HashGrid", "Bvh", "Mesh", "Volume", "MeshQueryPoint", "MeshQueryRay", "marching_cubes"]

for _name in __all__:
    if not hasattr(_kc, _name):   # kernelcore's own names win
        setattr(_kc, _name, globals()[_name])
