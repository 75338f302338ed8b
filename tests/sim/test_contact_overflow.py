"""One overflow counter array per step for every contact family (sim/contacts.py): each family that
runs out of slots raises its own message, naming the argument that sizes its slots."""
import numpy as np
import pytest

import kernelcore as kc
import sim
from sim.contacts import (OVERFLOW_BODY_PAIR, OVERFLOW_FAMILIES, OVERFLOW_MESH_EDGE, OVERFLOW_MESH_PAIR,
                          OVERFLOW_MESH_STATIC)

pytest.importorskip("geometry")

CUBE_POINTS = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], np.float64) - 0.5
CUBE_TRIS = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                      [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])


def _prism(half_width=0.6, height=0.1, half_length=1.0):
    section = [(-half_width, 0.0), (half_width, 0.0), (0.0, height)]
    pts = np.array([(x, y, z) for z in (-half_length, half_length) for x, y in section])
    tris = [(0, 2, 1), (3, 4, 5), (0, 1, 4), (0, 4, 3), (1, 2, 5), (1, 5, 4), (2, 0, 3), (2, 3, 5)]
    return pts, np.asarray(tris)


def _step(m, **kwargs):
    solver = sim.SolverSemiImplicit(m, **kwargs)
    s0, s1 = m.state(), m.state()
    solver.step(m, s0, s1, None, 1e-3)
    return solver, s1


def test_body_pair_overflow_names_body_pair_slots():
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    for x, y in ((0.0, 0.0), (0.05, 0.0), (-0.05, 0.0), (0.0, 0.05)):  # the first sphere touches three others
        b.add_shape_sphere(radius=0.04, body=b.add_body(kc.transform(kc.vec3(x, y, 0.0), kc.quat(0, 0, 0, 1))))
    m = b.finalize()
    with pytest.raises(RuntimeError, match=r"^body-body contacts: 1 contacts did not fit in slots_per_thread=2 .*"
                                           r"body_pair_slots to SolverSemiImplicit"):
        _step(m, body_pair_slots=2)
    solver, s1 = _step(m, body_pair_slots=3)
    # one counter array, shared by the step's two contact arrays
    assert s1.contacts.overflow is s1.body_pair_contacts.overflow
    assert s1.contacts.overflow.shape[0] == OVERFLOW_FAMILIES
    assert not s1.contacts.overflow.numpy().any()


def test_mesh_pair_overflow_names_mesh_contact_slots():
    # two spheres resting on a mesh body: the pair thread of its first vertex tests both sphere centres
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    cube = b.add_body(kc.transform(kc.vec3(0.0, 0.0, 0.0), kc.quat(0, 0, 0, 1)))
    b.add_shape_mesh(CUBE_POINTS, CUBE_TRIS, scale=(0.4, 0.2, 0.4), body=cube)
    for x in (-0.1, 0.1):
        b.add_shape_sphere(radius=0.05, body=b.add_body(kc.transform(kc.vec3(x, 0.149, 0.0), kc.quat(0, 0, 0, 1))))
    m = b.finalize()
    with pytest.raises(RuntimeError, match=r"^mesh contacts: 1 contacts did not fit in their slots \(pair_slots=1 "
                                           r"shapes at one mesh vertex\); pass a larger mesh_contact_slots"):
        _step(m, mesh_contact_slots=1)
    _, s1 = _step(m, mesh_contact_slots=2)
    assert int(s1.body_pair_contacts.count.numpy()[0]) == 2


def test_mesh_static_overflow_names_mesh_contact_slots():
    # a static mesh's vertices under one box body (test_rigid_mesh_contact_arrays.py has the numbers)
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    pts = np.array([[x, 0.0, z] for x in (-0.2, 0.0, 0.2) for z in (-1.0, 1.0)] + [[0.0, -0.5, 0.0]])
    tris = np.array([[0, 1, 6], [1, 3, 6], [3, 2, 6], [2, 0, 6], [2, 3, 5], [2, 5, 4], [0, 2, 3], [0, 3, 1]])
    b.add_shape_mesh(pts[[0, 2, 4, 1, 3, 5, 6]], tris[:4])
    body = b.add_body(kc.transform(kc.vec3(0.0, 0.0, 0.0), kc.quat(0, 0, 0, 1)))
    b.add_shape_box(half_extents=(0.3, 0.05, 1.2), body=body)  # holds all six top vertices
    m = b.finalize()
    with pytest.raises(RuntimeError, match=r"^mesh contacts: \d+ contacts did not fit in their slots "
                                           r"\(vertex_slots=2 static mesh vertices under one body shape\)"):
        _step(m, mesh_contact_slots=2)


def test_mesh_edge_overflow_names_mesh_contact_slots():
    # a box across a static prism's ridge: the ridge gives two edge contacts, one slot holds one
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    b.add_shape_mesh(*_prism())
    body = b.add_body(kc.transform(kc.vec3(0.0, 0.145, 0.0), kc.quat(0, 0, 0, 1)))
    b.add_shape_box(half_extents=(0.3, 0.05, 0.1), body=body)
    m = b.finalize()
    with pytest.raises(RuntimeError, match=r"^mesh edge contacts: 1 contacts did not fit in their slots "
                                           r"\(slots=1 .*\); pass a larger mesh_contact_slots"):
        _step(m, mesh_contact_slots=1)
    _, s1 = _step(m, mesh_contact_slots=2)
    assert int(s1.contacts.count.numpy()[0]) == 2


def test_families_count_in_their_own_counter():
    assert sorted(int(f) for f in (OVERFLOW_BODY_PAIR, OVERFLOW_MESH_STATIC, OVERFLOW_MESH_PAIR,
                                   OVERFLOW_MESH_EDGE)) == list(range(OVERFLOW_FAMILIES))
