"""Solid cells of the grid fluid from a signed-distance ``geometry.Volume`` (imports geometry)."""
from __future__ import annotations

import kernelcore as kc
import geometry  # noqa: F401  (registers the volume builtins used below)


@kc.kernel
def solid_volume_kernel(volume: kc.uint64, dx: float, flat: int, solid: kc.array(dtype=kc.int32, ndim=3)):
    """Mark cells whose centre has a negative signed distance in the volume (world coordinates in metres)."""
    i, j, k = kc.tid()
    z = (float(k) + 0.5) * dx
    if flat != 0:
        z = 0.0  # a 2-D grid samples the volume's z = 0 plane
    p = kc.vec3((float(i) + 0.5) * dx, (float(j) + 0.5) * dx, z)
    if kc.volume_sample_world(volume, p, 1) < 0.0:
        solid[i, j, k] = 1


def mark_volume(volume, dx, solid, dim):
    if not hasattr(volume, "id"):
        raise TypeError(f"SolverGridFluid.add_solid_sdf: expected a geometry.Volume, got {type(volume).__name__}")
    kc.launch(solid_volume_kernel, dim=solid.shape, inputs=[volume.id, float(dx), int(dim == 2)], outputs=[solid],
              device=solid.device, record_tape=False)
