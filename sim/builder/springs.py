"""Springs: the ModelBuilder part that links particles with damped springs."""
from __future__ import annotations

import numpy as np

import kernelcore as kc


class SpringBuilder:
    """Mixin: damped linear springs between particle pairs."""

    def _init_springs(self):
        self.spring_indices = []      # flat pairs i0, j0, i1, j1, ...
        self.spring_rest_length = []
        self.spring_stiffness = []
        self.spring_damping = []

    @property
    def spring_count(self) -> int:
        return len(self.spring_rest_length)

    def add_spring(self, i: int, j: int, ke: float, kd: float = 0.0, rest_length: float | None = None) -> int:
        """Link particles ``i`` and ``j``; returns the spring index.

        Args:
            ke: stiffness [N/m] (>= 0).
            kd: damping along the spring [N s/m] (>= 0).
            rest_length: [m]; None takes the current distance between the particles.
        """
        n = self.particle_count
        i, j = int(i), int(j)
        if not (0 <= i < n and 0 <= j < n) or i == j:
            raise ValueError(f"add_spring: particles ({i}, {j}) must be two distinct indices below {n}")
        if not (np.isfinite(ke) and ke >= 0 and np.isfinite(kd) and kd >= 0):
            raise ValueError(f"add_spring: ke and kd must be finite and >= 0, got ke={ke!r}, kd={kd!r}")
        if rest_length is None:
            rest_length = float(np.linalg.norm(np.subtract(self.particle_q[i], self.particle_q[j])))
        elif not (np.isfinite(rest_length) and rest_length >= 0):
            raise ValueError(f"add_spring: rest_length must be finite and >= 0, got {rest_length!r}")
        self.spring_indices.extend((i, j))
        self.spring_rest_length.append(float(rest_length))
        self.spring_stiffness.append(float(ke))
        self.spring_damping.append(float(kd))
        return self.spring_count - 1

    def add_spring_grid(self, start: int, dim_x: int, dim_y: int, dim_z: int, ke: float, kd: float = 0.0,
                        shear: bool = True) -> range:
        """Connect a block of particles made by add_particle_grid (first index ``start``).

        Links each particle to its neighbours along the grid axes and, with ``shear``,
        along the face diagonals of each grid plane.  Returns the range of new springs.
        """
        dims = (int(dim_x), int(dim_y), int(dim_z))
        if start < 0 or start + dims[0] * dims[1] * dims[2] > self.particle_count:
            raise ValueError(f"add_spring_grid: grid {dims} starting at particle {start} exceeds "
                             f"{self.particle_count} particles")

        def idx(x, y, z):
            return start + x + dims[0] * (y + dims[1] * z)

        first = self.spring_count
        offsets = [(1, 0, 0), (0, 1, 0), (0, 0, 1)]
        if shear:
            offsets += [(1, 1, 0), (1, -1, 0), (1, 0, 1), (1, 0, -1), (0, 1, 1), (0, 1, -1)]
        for z in range(dims[2]):
            for y in range(dims[1]):
                for x in range(dims[0]):
                    for ox, oy, oz in offsets:
                        a, b, c = x + ox, y + oy, z + oz
                        if 0 <= a < dims[0] and 0 <= b < dims[1] and 0 <= c < dims[2]:
                            self.add_spring(idx(x, y, z), idx(a, b, c), ke, kd)
        return range(first, self.spring_count)

    def _finalize_springs(self, m, device, requires_grad):
        def arr(values):
            return kc.array(np.asarray(values, np.float32).reshape(-1), dtype=float, device=device,
                            requires_grad=requires_grad)

        m.spring_count = self.spring_count
        m.spring_indices = kc.array(np.asarray(self.spring_indices, np.int32).reshape(-1), dtype=kc.int32,
                                    device=device)
        m.spring_rest_length = arr(self.spring_rest_length)
        m.spring_stiffness = arr(self.spring_stiffness)
        m.spring_damping = arr(self.spring_damping)
