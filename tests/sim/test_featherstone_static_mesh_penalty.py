"""SolverFeatherstone(toi=False) penalty contacts of links with static triangle meshes, and of mesh links
(sim/featherstone_mesh_contacts.py; issue 16).

References: the same scenes with a static box (whose top face is the mesh floor) in place of the
mesh, analytic resting heights (the contact law's penetration is far below the tolerances), and
float64 central differences of the same simulation for the Tape's gradients.
"""
import warnings

import numpy as np
import pytest

import sim

pytest.importorskip("geometry")

from featherstone_scenes import assert_gradients_match_fd, run  # noqa: E402

DT = 1e-3

CUBE = 0.05 * np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], np.float64)


def add_floor(b, kind, y=0.0, centre=(0.0, 0.0), half=1.0, cells=8):
    """A floor whose top is at height ``y`` [m] over the square ``centre`` +- ``half`` (x, z): a static box
    ("box") or an open triangle mesh of ``cells`` x ``cells`` quads ("mesh": vertices and edges under
    the links' points)."""
    cx, cz = centre
    if kind == "box":
        b.add_shape_box(pos=(cx, y - 0.05, cz), half_extents=(half, 0.05, half))
        return
    g = np.linspace(-half, half, cells + 1)
    verts = np.array([(cx + x, y, cz + z) for z in g for x in g])
    tris = []
    for i in range(cells):
        for j in range(cells):
            a = i * (cells + 1) + j
            tris += [a, a + cells + 1, a + 1, a + 1, a + cells + 1, a + cells + 2]  # normals up (+y)
    b.add_shape_mesh(verts, np.array(tris))


def add_link_shape(b, body, kind, pos=(0.0, 0.0, 0.0), density=1000.0):
    if kind == "sphere":
        b.add_shape_sphere(pos=pos, radius=0.05, body=body, density=density)
    elif kind == "box":
        b.add_shape_box(pos=pos, half_extents=(0.05, 0.05, 0.05), body=body, density=density)
    elif kind == "capsule":  # along x
        b.add_shape_capsule(pos=pos, radius=0.05, half_height=0.1, body=body, density=density,
                            rot=(0.0, 0.0, np.sin(np.pi / 4), np.cos(np.pi / 4)))
    else:  # a cube hull (mesh link)
        b.add_shape_mesh(CUBE, pos=pos, is_convex=True, body=body, density=density)


def solver(model, toi=False):
    """SolverFeatherstone, failing on any warning (no link shape may be left without contacts)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return sim.SolverFeatherstone(model, toi=toi)


def final_state(model, toi, steps):
    """The state after ``steps`` steps of DT from the model's state."""
    s0, s1 = model.state(), model.state()
    stepper = solver(model, toi)
    for _ in range(steps):
        stepper.step(model, s0, s1, None, DT)
        s0, s1 = s1, s0
    return s0


@pytest.mark.parametrize("bob", ["sphere", "box", "capsule", "hull"])
def test_pendulum_bob_rests_on_a_mesh_floor_as_on_a_box_floor(bob):
    # a horizontal rod (pivot 0.2 m above the floor) falls until its bob at 0.5 m rests on the floor:
    # the resting angle on the mesh and on the box are the same (the bob's height within 1 mm)
    heights = {}
    for floor in ("box", "mesh"):
        b = sim.ModelBuilder(gravity=(0.0, -9.81, 0.0))
        b.set_material(0, ke=1e4, mu=0.5, restitution=0.0)
        add_floor(b, floor)
        body = b.add_body()
        add_link_shape(b, body, bob, pos=(0.5, 0.0, 0.0))
        b.add_joint_revolute(-1, body, parent_xform=(0.0, 0.2, 0.0, 0, 0, 0, 1), axis=(0, 0, 1))
        model = b.finalize()
        state = final_state(model, False, 600)
        heights[floor] = 0.2 + 0.5 * np.sin(float(state.joint_q.numpy()[0]))
        assert abs(float(state.joint_qd.numpy()[0])) < 1e-2, floor  # at rest
    # the bob stopped on the floor, not through it: its centre 5 cm (the shapes' half size) above y = 0 plus
    # what the rod's tilt lifts it by (at most ~3 cm for the 10 cm capsule)
    assert 0.045 < heights["box"] < 0.08
    assert heights["mesh"] == pytest.approx(heights["box"], abs=1e-3)


@pytest.mark.parametrize("foot", ["box", "hull"])
def test_box_foot_stands_on_a_mesh_floor_on_its_corners(foot):
    # a free box foot (or a box-shaped mesh link) dropped tilted onto a fine mesh floor: after 1 s it lies
    # flat on its four bottom corners (a manifold, not one closest point), none below -2 mm
    b = sim.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    b.set_material(0, ke=1e4, mu=0.8, restitution=0.0)
    add_floor(b, "mesh", cells=16)
    tilt = np.array([np.sin(0.1), 0.0, np.sin(0.05), 1.0])
    tilt /= np.linalg.norm(tilt)
    body = b.add_body(xform=(0.03, 0.12, 0.02, *tilt))
    if foot == "box":
        b.add_shape_box(half_extents=(0.15, 0.03, 0.08), body=body, density=500.0)
    else:
        b.add_shape_mesh(CUBE * (3.0, 0.6, 1.6), is_convex=True, body=body, density=500.0)
    b.add_joint_free(body)
    model = b.finalize()
    _, qds, state = run(model, solver(model), 1000, DT)
    q = state.joint_q.numpy().astype(np.float64)
    x, (qx, qy, qz, qw) = q[:3], q[3:7]
    rot = np.array([[1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), 2 * (qx * qz + qy * qw)],
                    [2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw)],
                    [2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy)]])
    corners = x + (np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
                   * (0.15, 0.03, 0.08)) @ rot.T
    bottom = np.sort(corners[:, 1])[:4]
    assert bottom.min() > -2e-3
    assert bottom.max() < 1e-3  # flat: all four bottom corners on the floor (a single contact would rock)
    assert np.abs(qds[-1]).max() < 1e-2


@pytest.mark.parametrize("link", ["box", "hull"])
def test_gradients_through_mesh_floor_contacts_match_finite_differences(link):
    # a tilted, spinning link thrown at a mesh floor with friction under gravity (a corner lands first)
    # (its lowest corner starts ~8 mm above the floor and lands after ~15 of the 40 steps)
    b = sim.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    b.set_material(0, ke=1e4, mu=0.8, restitution=0.0)
    add_floor(b, "mesh", cells=4)
    body = b.add_body(xform=(0.0, 0.075, 0.0, 0, 0, 0, 1), vel=(0.3, -0.5, 0.1), ang_vel=(0.5, 1.0, 1.5))
    add_link_shape(b, body, link)
    b.add_joint_free(body)
    model = b.finalize(requires_grad=True)
    q0, qd0 = model.joint_q.numpy().astype(np.float64), model.joint_qd.numpy().astype(np.float64)
    tilt = np.array([np.sin(0.2), 0.0, np.sin(0.15), 1.0])
    q0[3:] = tilt / np.linalg.norm(tilt)
    states = assert_gradients_match_fd(model, q0, qd0, 40, DT, toi=False)
    # it touched the floor: the floor pushed it up at some step (the gradients are the contact's)
    assert max(float(s.joint_qd.numpy()[1]) - float(p.joint_qd.numpy()[1])
               for p, s in zip(states, states[1:])) > 0.0


def mixed_scene(links):
    """One model: the ground, a static box (top at y = 0.1 over x < 0) and a raised mesh floor (top at
    y = 0.2 over x > 0); ``links``: (kind, collider) of free links (sphere, box) starting 5 cm above their
    collider ("box", "mesh", "ground").  Returns (model, each link's resting height [m])."""
    b = sim.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    b.set_ground_plane()
    b.set_material(0, ke=1e4, mu=0.8, restitution=0.0)
    add_floor(b, "box", y=0.1, centre=(-0.6, 0.0), half=0.4)
    add_floor(b, "mesh", y=0.2, centre=(0.6, 0.0), half=0.4)
    spot = {"box": (-0.6, 0.1), "mesh": (0.6, 0.2), "ground": (0.0, 0.0)}
    rest = []
    for i, (kind, collider) in enumerate(links):
        x, top = spot[collider]
        body = b.add_body(xform=(x, top + 0.1, 0.3 * (i % 2) - 0.15, 0, 0, 0, 1))
        add_link_shape(b, body, kind, density=500.0)
        b.add_joint_free(body)
        rest.append(top + 0.05)
    return b.finalize(), np.array(rest)


@pytest.mark.parametrize("toi", [False, True])
def test_mixed_scene_of_ground_static_box_and_mesh(toi):
    # sphere and box links on each collider rest on its top (toi=True: the box on the mesh, see below)
    links = [("sphere", "box"), ("box", "box"), ("sphere", "mesh"), ("box", "mesh"), ("sphere", "ground"),
             ("box", "ground")]
    if toi:
        links.remove(("box", "mesh"))
    model, rest = mixed_scene(links)
    state = final_state(model, toi, 500)
    np.testing.assert_allclose(state.joint_q.numpy().reshape(-1, 7)[:, 1], rest, atol=2e-3)
    # at rest (linear velocities; a small box resting on penalty contacts rocks at ~0.16 rad/s, on the
    # ground as on the static box and the mesh)
    assert np.abs(state.joint_qd.numpy().reshape(-1, 6)[:, :3]).max() < 1e-2


@pytest.mark.parametrize("link", ["box", "hull"])
def test_toi_box_link_rests_on_a_mesh_floor(link):
    # toi=True: a box (or box hull) link dropped flat on a mesh floor whose grid lines run under its edges
    # lands through its face centre (the manifold's extent, not one corner) and rests on the floor
    model, rest = mixed_scene([(link, "mesh")])
    state = final_state(model, True, 500)
    assert float(state.joint_q.numpy()[1]) == pytest.approx(rest[0], abs=2e-3)
    assert np.abs(state.joint_q.numpy()[3:6]).max() < 1e-2  # not tipped over
    assert np.abs(state.joint_qd.numpy()).max() < 1e-2


def test_self_collision_pairs_mesh_links_without_warning():
    # a chain of a box link, a link between and a mesh link: self_collision pairs the box with the mesh
    # link (not joined by a joint) and warns about nothing
    b = sim.ModelBuilder()
    base = b.add_body()
    add_link_shape(b, base, "box")
    mid = b.add_body()
    add_link_shape(b, mid, "sphere", pos=(0.3, 0.0, 0.0))
    tip = b.add_body()
    add_link_shape(b, tip, "hull", pos=(0.6, 0.0, 0.0))
    b.add_joint_revolute(-1, base, axis=(0, 0, 1))
    b.add_joint_revolute(base, mid, axis=(0, 0, 1))
    b.add_joint_revolute(mid, tip, axis=(0, 0, 1))
    model = b.finalize()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stepper = sim.SolverFeatherstone(model, self_collision=True)
    a, c, _ = (x.numpy() for x in stepper.self_pairs)
    assert [(int(i), int(j)) for i, j in zip(a, c)] == [(0, 2)]  # shapes of links 0 and 2
