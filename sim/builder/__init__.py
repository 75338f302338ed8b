"""sim.ModelBuilder: collect a scene in Python lists, then ``finalize()`` into kc arrays.

The builder is assembled from one mixin per domain (particles, springs, shapes,
materials, bodies); joints will be a further mixin.  Each mixin keeps its own
lists and writes its part of the Model in ``_finalize_<domain>``.
"""
from __future__ import annotations

import numpy as np

import kernelcore as kc

from ..model import Model
from .joints import JointBuilder
from .replicate import ReplicateBuilder
from .cloth import ClothBuilder
from .bodies import BodyBuilder, combine_mass_properties, mesh_mass_properties, shape_mass_properties
from .materials import MaterialBuilder, damping_ratio_from_restitution, restitution_of_damping_ratio
from .particles import ParticleBuilder
from .shapes import ShapeBuilder, quat_to_matrix
from .springs import SpringBuilder

__all__ = ["ModelBuilder", "damping_ratio_from_restitution", "restitution_of_damping_ratio", "quat_to_matrix",
           "shape_mass_properties", "combine_mass_properties", "mesh_mass_properties"]


class ModelBuilder(MaterialBuilder, ParticleBuilder, SpringBuilder, BodyBuilder, ShapeBuilder, ClothBuilder,
                   JointBuilder, ReplicateBuilder):
    """Build a :class:`sim.Model` step by step.

    Args:
        gravity: acceleration of gravity (3,) [m/s^2], default (0, -9.81, 0) (Y up).
        particle_damping: linear drag applied to every particle [1/s].
    """

    def __init__(self, gravity=(0.0, -9.81, 0.0), particle_damping: float = 0.0):
        self.gravity = gravity
        if not (np.isfinite(particle_damping) and particle_damping >= 0):
            raise ValueError(f"ModelBuilder: particle_damping must be finite and >= 0, got {particle_damping!r}")
        self.particle_damping = float(particle_damping)
        self._init_joints()
        self._init_materials()
        self._init_particles()
        self._init_springs()
        self._init_bodies()
        self._init_shapes()
        self._init_cloth()

    @property
    def gravity(self):
        """Acceleration of gravity, a tuple of 3 floats [m/s^2]."""
        return self._gravity

    @gravity.setter
    def gravity(self, value):
        # checked on assignment too: a scalar (Warp's up-axis gravity) failed in finalize's vec3 before
        try:
            g = np.asarray(value, np.float64).reshape(-1)
        except (TypeError, ValueError):
            g = None
        if g is None or g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ValueError(f"ModelBuilder: gravity must be 3 finite numbers, got {value!r}")
        self._gravity = tuple(float(x) for x in g)

    def finalize(self, device="cpu", requires_grad: bool = False) -> Model:
        """Copy everything into kc arrays on ``device``; float arrays get gradients with ``requires_grad``."""
        m = Model(device)
        dev = m.device
        m.requires_grad = bool(requires_grad)
        m.gravity = kc.vec3(*self.gravity)
        self._finalize_materials(m, dev, requires_grad)
        self._finalize_particles(m, dev, requires_grad)
        self._finalize_springs(m, dev, requires_grad)
        self._finalize_shapes(m, dev, requires_grad)
        self._finalize_bodies(m, dev, requires_grad)
        self._finalize_cloth(m, dev, requires_grad)
        self._finalize_joints(m, dev, requires_grad)
        return m
