"""Solvers whose kernels do not separate environments refuse a model of several (sim/worlds.py).

Each case builds the same scene twice with add_builder: separate environments must raise a
one-line error naming the solver and the feature; one shared environment must build.
"""
import numpy as np
import pytest

import sim
from sim.worlds import environment_ids, static_shapes_in_environments


def _particles(b, at=(0.0, 0.5, 0.0)):
    fluid = b.add_material(model="fluid")   # the same particles serve PBF, MPM and the particle solvers
    b.add_particle_grid(at, (0, 0, 0), 2, 2, 2, spacing=0.05, density=1000.0, radius=0.02, material=fluid)


def _two_envs(make, separate=True):
    env = sim.ModelBuilder()
    make(env)
    top = sim.ModelBuilder()
    top.add_builder(env, xform=(0, 0, 0, 0, 0, 0, 1), separate_world=separate)
    top.add_builder(env, xform=(0.0, 0, 3.0, 0, 0, 0, 1), separate_world=separate)
    return top.finalize()


def test_environment_ids_and_static_shapes():
    def make(b):
        _particles(b)
        b.add_shape_sphere((0.0, 0.0, 0.0), radius=0.1)
    m = _two_envs(make)
    assert environment_ids(m) == [0, 1]
    assert static_shapes_in_environments(m)
    shared = _two_envs(make, separate=False)
    assert len(environment_ids(shared)) <= 1


@pytest.mark.parametrize("solver, feature", [
    (lambda m: sim.SolverPBF(m, smoothing_length=0.1, bounds=((-1, -1, -1), (1, 2, 5))), "particle neighbourhoods"),
    (lambda m: sim.SolverMPM(m, dx=0.1, bounds=((-1, -1, -1), (1, 2, 5))), "background grid"),
    (lambda m: sim.SolverSemiImplicit(m, toi=True), "toi=True"),
])
def test_coupling_solvers_refuse_several_environments(solver, feature):
    with pytest.raises(ValueError, match=f"2 environments.*{feature}"):
        solver(_two_envs(_particles))
    solver(_two_envs(_particles, separate=False))   # one environment: builds


def test_static_shape_contact_refused_when_shapes_belong_to_environments():
    def make(b):
        _particles(b)
        b.add_shape_box((0.0, 0.0, 0.0), half_extents=(0.2, 0.05, 0.2))
    with pytest.raises(ValueError, match="SolverXPBD: the model has 2 environments.*static shapes"):
        sim.SolverXPBD(_two_envs(make))
    with pytest.raises(ValueError, match="SolverVBD: the model has 2 environments.*static shapes"):
        sim.SolverVBD(_two_envs(make))
    sim.SolverXPBD(_two_envs(_particles))   # no static shapes in the environments: nothing couples them


def test_featherstone_toi_refuses_static_shapes_of_several_environments():
    def make(b):
        bob = b.add_body(mass=1.0, inertia=np.eye(3) * 1e-3, com=(0.5, 0, 0))
        b.add_shape_sphere(pos=(0.5, 0, 0), radius=0.1, body=bob, density=1.0)
        b.add_joint_revolute(-1, bob, parent_xform=(0, 0.3, 0, 0, 0, 0, 1), axis=(0, 0, 1))
        b.add_shape_box((0.5, -0.5, 0.0), half_extents=(0.2, 0.05, 0.2))
    m = _two_envs(make)
    with pytest.raises(ValueError, match="SolverFeatherstone: the model has 2 environments.*toi=True"):
        sim.SolverFeatherstone(m, toi=True)
    sim.SolverFeatherstone(m)   # penalty contacts: body-static pairs are filtered by environment
