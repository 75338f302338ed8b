"""Triangle-mesh shapes on rigid bodies: mass properties, contacts with every collider, gradients."""
import numpy as np
import pytest

import geometry
import kernelcore as kc
import sim
from sim.builder import quat_to_matrix

# the cube [-0.5, 0.5]^3, triangles counter-clockwise seen from outside
CUBE_POINTS = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], np.float64) - 0.5
CUBE_TRIS = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                      [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])
TILT = (np.sin(0.05), 0.0, 0.0, np.cos(0.05))


def _quat(angle, axis):
    axis = np.asarray(axis, np.float64) / np.linalg.norm(axis)
    return tuple(np.append(axis * np.sin(angle / 2), np.cos(angle / 2)))


def _simulate(b, steps, dt, every=1, requires_grad=False):
    m = b.finalize(requires_grad=requires_grad)
    solver = sim.SolverSemiImplicit(m)
    s0, s1 = m.state(), m.state()
    out = []
    for k in range(steps):
        solver.step(m, s0, s1, None, dt)
        s0, s1 = s1, s0
        if (k + 1) % every == 0:
            out.append((s0.body_q.numpy().copy(), s0.body_qd.numpy().copy()))
    return m, out


def _world_vertices(q, points):
    return np.asarray(points) @ quat_to_matrix(q[3:]).T + q[:3]


def _grid_mesh(nx, nz, size_x, size_z, height=lambda x, z: 0.0 * x):
    """A heightfield over [-size_x, size_x] x [-size_z, size_z], triangles facing +y."""
    xs, zs = np.linspace(-size_x, size_x, nx + 1), np.linspace(-size_z, size_z, nz + 1)
    X, Z = np.meshgrid(xs, zs, indexing="ij")
    pts = np.stack([X, height(X, Z), Z], -1).reshape(-1, 3)
    tris = []
    for i in range(nx):
        for j in range(nz):
            a, b, c, d = i * (nz + 1) + j, (i + 1) * (nz + 1) + j, (i + 1) * (nz + 1) + j + 1, i * (nz + 1) + j + 1
            tris += [(a, d, c), (a, c, b)]  # counter-clockwise seen from +y
    return pts, np.asarray(tris)


# -- mass properties -------------------------------------------------------------------------------

@pytest.mark.parametrize("is_convex", [None, True])
def test_mesh_cube_body_has_the_mass_properties_of_the_box(is_convex):
    half = np.array([0.3, 0.1, 0.2])
    shape_rot = _quat(0.7, (1, 2, 3))
    shape_pos = (0.1, -0.2, 0.3)
    ref, mesh = sim.ModelBuilder(), sim.ModelBuilder()
    b = ref.add_body()
    ref.add_shape_box(pos=shape_pos, rot=shape_rot, half_extents=half, body=b, density=700.0)
    ref.add_shape_sphere(pos=(0.5, 0, 0), radius=0.1, body=b, density=300.0)
    b = mesh.add_body()
    indices = None if is_convex else CUBE_TRIS
    # the mesh's own origin at a corner: its centre of mass lies off the shape frame's origin
    corner = np.asarray(shape_pos) - quat_to_matrix(shape_rot) @ half
    mesh.add_shape_mesh(CUBE_POINTS + 0.5, indices, pos=corner, rot=shape_rot, scale=2 * half, body=b,
                        density=700.0, is_convex=is_convex)
    mesh.add_shape_sphere(pos=(0.5, 0, 0), radius=0.1, body=b, density=300.0)
    m_ref, m = ref.finalize(), mesh.finalize()
    np.testing.assert_allclose(m.body_mass.numpy(), m_ref.body_mass.numpy(), rtol=1e-6)
    np.testing.assert_allclose(m.body_com.numpy(), m_ref.body_com.numpy(), atol=1e-6)
    np.testing.assert_allclose(m.body_inertia.numpy(), m_ref.body_inertia.numpy(), rtol=1e-5, atol=1e-8)
    assert m.shape_mesh_convex[0] is bool(is_convex)


def test_convex_hull_drops_interior_points_and_faces_outwards():
    rng = np.random.default_rng(3)
    inside = rng.uniform(-0.3, 0.3, (20, 3))
    b = sim.ModelBuilder()
    body = b.add_body()
    b.add_shape_mesh(np.vstack([CUBE_POINTS, inside]), body=body, is_convex=True, density=1000.0)
    m = b.finalize()
    pts, idx = m.shape_mesh_points[0]
    assert len(pts) == 8 and len(idx) == 36
    assert m.body_mass.numpy()[0] == pytest.approx(1000.0, rel=1e-6)


# -- contacts --------------------------------------------------------------------------------------

@pytest.mark.parametrize("offset", [False, True])
def test_mesh_cube_rests_on_the_ground_like_a_box(offset):
    # offset: the shape sits off the body origin, turned, and is not a cube (the kernels compose both frames)
    shape_pos = (0.05, -0.02, 0.03) if offset else (0.0, 0.0, 0.0)
    shape_rot = _quat(np.pi / 2, (0, 0, 1)) if offset else (0.0, 0.0, 0.0, 1.0)
    half = np.array([0.1, 0.15, 0.1]) if offset else np.array([0.1, 0.1, 0.1])

    def scene(kind):
        b = sim.ModelBuilder()
        b.set_material(0, ke=1e5, restitution=0.0, mu=0.5)
        b.set_ground_plane()
        body = b.add_body(kc.transform(kc.vec3(0, 0.15, 0), kc.quat(*TILT)))
        if kind == "mesh":
            b.add_shape_mesh(CUBE_POINTS, CUBE_TRIS, pos=shape_pos, rot=shape_rot, scale=2 * half, body=body)
        else:
            b.add_shape_box(pos=shape_pos, rot=shape_rot, half_extents=half, body=body)
        return _simulate(b, 2000, 1e-3, every=100)

    _, mesh_traj = scene("mesh")
    _, box_traj = scene("box")
    q, qd = mesh_traj[-1]
    corners = (CUBE_POINTS * 2 * half) @ quat_to_matrix(shape_rot).T + shape_pos
    world = _world_vertices(q[0], corners)
    assert world[:, 1].min() > -2e-3                                   # penetration under 2 mm
    np.testing.assert_allclose(np.sort(world[:, 1])[:4], 0.0, atol=2e-3)  # flat on four corners
    assert np.linalg.norm(qd[0, :3]) < 1e-2 and np.linalg.norm(qd[0, 3:]) < 1e-1
    for (qm, _), (qb, _) in zip(mesh_traj, box_traj):                  # the same motion all the way
        np.testing.assert_allclose(qm[0, :3], qb[0, :3], atol=1e-4)


def test_mesh_body_lands_on_a_static_sphere_and_stays_on_top():
    b = sim.ModelBuilder()
    b.set_material(0, ke=1e5, restitution=0.0, mu=0.8)
    b.add_shape_sphere((0, 0, 0), 0.5)
    body = b.add_body(kc.transform(kc.vec3(0.02, 0.61, 0), kc.quat(0, 0, 0, 1)))
    b.add_shape_mesh(CUBE_POINTS, CUBE_TRIS, scale=(0.4, 0.2, 0.4), body=body, density=250.0)
    m, traj = _simulate(b, 1500, 1e-3, every=5)
    # its bottom face (the face, not a corner: no vertex touches) rests and rocks on the sphere's top: the
    # centre stays 0.6 m from the sphere's (a board rocking on a ball rolls: sqrt(0.6^2 + (0.5 angle)^2))
    dist = np.array([np.linalg.norm(q[0, :3]) for q, _ in traj])
    assert dist.min() > 0.6 - 4e-3
    angle = np.array([2 * np.arcsin(np.linalg.norm(q[0, 3:6])) for q, _ in traj])
    landed = np.nonzero(dist < 0.6)[0][0]
    assert angle[landed:].max() > 0.02  # it rocks
    np.testing.assert_allclose(dist[landed:], np.hypot(0.6, 0.5 * angle[landed:]), atol=3e-3)
    q, qd = traj[-1]
    assert q[0, 1] > 0.58 and abs(q[0, 0]) < 0.1   # still on top


def test_mesh_body_falls_onto_a_terrain_mesh_without_passing_through():
    pts, tris = _grid_mesh(12, 12, 1.5, 1.5, lambda x, z: 0.08 * np.sin(2 * x) * np.cos(2 * z))
    terrain = geometry.Mesh(pts.astype(np.float32), tris.reshape(-1).astype(np.int32))
    b = sim.ModelBuilder()
    b.set_material(0, ke=1e5, restitution=0.2, mu=0.8)
    b.add_shape_mesh(pts, tris)
    body = b.add_body(kc.transform(kc.vec3(0.3, 0.5, -0.2), kc.quat(*_quat(0.4, (1, 0, 1)))), vel=(0, -2.0, 0))
    cube = CUBE_POINTS * 0.2
    b.add_shape_mesh(cube, CUBE_TRIS, body=body)
    m, traj = _simulate(b, 5000, 5e-4, every=10)
    depth = [terrain.signed_distance(_world_vertices(q[0], cube).astype(np.float32)).min() for q, _ in traj]
    # the impact at ~3 m/s sinks a corner by at most v sqrt(m / ke) (3 cm, penalty physics); through is 20 cm
    assert min(depth) > -0.02
    q, qd = traj[-1]
    assert -2e-3 < depth[-1] < 2e-3                                    # resting on the terrain
    assert np.linalg.norm(qd[0, :3]) < 1e-2 and np.linalg.norm(qd[0, 3:]) < 0.1


def test_sphere_rolls_down_a_static_mesh_incline_at_five_sevenths_g_sin():
    theta, r = 0.3, 0.1
    rot = (0.0, 0.0, -np.sin(theta / 2), np.cos(theta / 2))  # the slope falls towards +x
    pts, tris = _grid_mesh(10, 4, 2.0, 0.5)                   # edges and vertices to roll over
    b = sim.ModelBuilder()
    b.set_material(0, ke=1e5, restitution=0.0, mu=0.8)
    b.add_shape_mesh(pts, tris, rot=rot)
    normal = quat_to_matrix(rot) @ (0, 1, 0)
    start = normal * (r - 9.81 * np.cos(theta) * 4.19 / 1e5)  # resting on the slope (sag m g cos / ke)
    body = b.add_body(kc.transform(kc.vec3(*start), kc.quat(0, 0, 0, 1)))
    b.add_shape_sphere(radius=r, body=body)
    dt = 1e-3
    m, traj = _simulate(b, 800, dt)
    down = np.array([np.cos(theta), -np.sin(theta), 0.0])
    s = np.array([q[0, :3] @ down for q, _ in traj])
    t = np.arange(1, len(s) + 1) * dt
    accel = 2 * np.polyfit(t[100:], s[100:], 2)[0]
    expected = 5.0 / 7.0 * 9.81 * np.sin(theta)
    assert abs(accel - expected) < 0.03 * expected, (accel, expected)
    q, qd = traj[-1]
    np.testing.assert_allclose(-qd[0, 5] * r, qd[0, :3] @ down, rtol=0.02)  # rolling without slipping
    assert abs(q[0, :3] @ normal - r) < 2e-3                                # on the surface


@pytest.mark.parametrize("top", ["mesh", "box", "sphere", "capsule"])
def test_bodies_stack_on_a_mesh_body(top):
    b = sim.ModelBuilder()
    b.set_material(0, ke=1e5, restitution=0.0, mu=0.8)
    b.set_ground_plane()
    lower = b.add_body(kc.transform(kc.vec3(0, 0.1, 0), kc.quat(0, 0, 0, 1)))
    b.add_shape_mesh(CUBE_POINTS, CUBE_TRIS, scale=(0.4, 0.2, 0.4), body=lower)
    upper = b.add_body(kc.transform(kc.vec3(0.03, 0.32, 0.02), kc.quat(*TILT)))
    rest = 0.3  # each top shape is 0.2 m tall
    if top == "mesh":
        b.add_shape_mesh(CUBE_POINTS, CUBE_TRIS, scale=0.2, body=upper)
    elif top == "box":
        b.add_shape_box(half_extents=(0.1, 0.1, 0.1), body=upper)
    elif top == "sphere":
        b.add_shape_sphere(radius=0.1, body=upper)
    else:  # lying on its side
        b.add_shape_capsule(rot=_quat(np.pi / 2, (0, 0, 1)), radius=0.1, half_height=0.1, body=upper)
    m, traj = _simulate(b, 2000, 1e-3, every=100)
    q, qd = traj[-1]
    np.testing.assert_allclose(q[0, :3], (0, 0.1, 0), atol=3e-3)
    assert abs(q[1, 1] - rest) < 3e-3, q[1]
    assert np.abs(qd[:, :3]).max() < 1e-2 and np.abs(qd[:, 3:]).max() < 0.1, qd


def test_mesh_bodies_collide_and_conserve_momentum():
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    b.set_material(0, ke=1e4, restitution=0.5, mu=0.3)
    left = b.add_body(kc.transform(kc.vec3(-0.3, 0.0, 0.0), kc.quat(*_quat(0.3, (0, 1, 1)))), vel=(1.5, 0.1, 0))
    b.add_shape_mesh(CUBE_POINTS, CUBE_TRIS, scale=0.2, body=left)
    right = b.add_body(kc.transform(kc.vec3(0.3, 0.05, 0.0), kc.quat(0, 0, 0, 1)))
    b.add_shape_mesh(CUBE_POINTS, CUBE_TRIS, scale=(0.3, 0.2, 0.2), body=right)
    m, traj = _simulate(b, 600, 1e-3, every=600)
    mass = m.body_mass.numpy().astype(np.float64)
    q, qd = traj[-1]
    assert qd[1, 0] > 0.3                                   # the right one was pushed
    np.testing.assert_allclose((mass[:, None] * qd[:, :3]).sum(0), (mass[0] * 1.5, mass[0] * 0.1, 0), atol=1e-4)


def test_hash_grid_broad_phase_finds_the_same_mesh_contacts_as_all_pairs():
    from sim.collide_body_mesh import BodyMeshContacts

    rng = np.random.default_rng(7)
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    b.set_material(0, ke=1e4, restitution=0.5, mu=0.3)
    for i in range(40):  # a jumble in a 1.2 m cube: meshes, boxes, spheres and capsules, some touching
        q = rng.normal(size=4)
        body = b.add_body(kc.transform(kc.vec3(*rng.uniform(0, 1.2, 3)), kc.quat(*(q / np.linalg.norm(q)))),
                          vel=rng.normal(size=3), ang_vel=rng.normal(size=3))
        kind = i % 4
        if kind in (0, 1):
            b.add_shape_mesh(CUBE_POINTS, CUBE_TRIS, scale=rng.uniform(0.1, 0.35, 3), body=body)
        elif kind == 2:
            b.add_shape_box(half_extents=rng.uniform(0.05, 0.15, 3), body=body)
        else:
            b.add_shape_sphere(radius=rng.uniform(0.05, 0.15), body=body)
    m = b.finalize()
    state = m.state()
    wrenches = []
    for grid_dim in (None, 1):  # one cell: every shape is a candidate of every other (all pairs)
        w = kc.zeros(m.body_count, dtype=kc.spatial_vector)
        BodyMeshContacts(m, grid_dim=grid_dim).eval(m, state, w, 1e-3)
        wrenches.append(w.numpy())
    touching = np.abs(wrenches[1]).max(axis=1) > 0
    assert touching.sum() > 10
    np.testing.assert_allclose(wrenches[0], wrenches[1], rtol=1e-5, atol=1e-3)


# -- gradients -------------------------------------------------------------------------------------

def _gradient_vs_fd(b, qd0, w, steps, dt, eps):
    m = b.finalize(requires_grad=True)
    solver = sim.SolverSemiImplicit(m)
    states = [m.state() for _ in range(steps + 1)]

    def run(v):
        states[0].body_qd.numpy()[0] = v
        for k in range(steps):
            solver.step(m, states[k], states[k + 1], None, dt)
        return float((states[-1].body_q.numpy().astype(np.float64) * w).sum())

    tape = kc.Tape()
    with tape:
        run(qd0)
    tape.backward(grads={states[-1].body_q: w.astype(np.float32)})
    grad = states[0].body_qd.grad.numpy()[0].astype(np.float64)
    fd = np.array([(run(qd0 + e) - run(qd0 - e)) / (2 * eps) for e in np.eye(6) * eps])
    return grad, fd, states


def test_gradient_through_mesh_body_ground_contact_matches_finite_differences():
    b = sim.ModelBuilder()
    b.set_material(0, ke=2e4, restitution=0.5, mu=0.4)
    b.set_ground_plane()
    body = b.add_body(kc.transform(kc.vec3(0, 0.3, 0), kc.quat(0, 0, 0, 1)))
    b.add_shape_mesh(CUBE_POINTS, CUBE_TRIS, scale=(0.2, 0.1, 0.16), body=body)
    w = np.array([[1.0, 0.6, -0.5, 0.0, 0.3, 0.0, 0.0]])
    grad, fd, states = _gradient_vs_fd(b, np.array([0.8, -1.0, 0.3, 1.0, 0.5, -2.0]), w, 300, 1e-3, 2e-4)
    assert min(s.body_q.numpy()[0, 1] for s in states) < 0.11   # it hit the ground
    assert np.abs(fd).max() > 0.1
    np.testing.assert_allclose(grad, fd, rtol=0.05, atol=5e-3)


def test_gradient_through_sphere_on_static_mesh_matches_finite_differences():
    pts, tris = _grid_mesh(4, 4, 1.0, 1.0, lambda x, z: 0.1 * x + 0.05 * z * z)
    b = sim.ModelBuilder()
    b.set_material(0, ke=2e4, restitution=0.5, mu=0.4)
    b.add_shape_mesh(pts, tris)
    body = b.add_body(kc.transform(kc.vec3(0.1, 0.3, 0.05), kc.quat(0, 0, 0, 1)))
    b.add_shape_sphere(radius=0.1, body=body)
    w = np.array([[1.0, 0.6, -0.5, 0.2, 0.3, 0.1, 0.0]])
    grad, fd, states = _gradient_vs_fd(b, np.array([0.8, -1.0, 0.3, 1.0, 0.5, -2.0]), w, 250, 1e-3, 2e-4)
    assert np.abs(fd).max() > 0.1
    np.testing.assert_allclose(grad, fd, rtol=0.05, atol=5e-3)


def test_gradient_through_mesh_body_on_static_sphere_matches_finite_differences():
    b = sim.ModelBuilder()
    b.set_material(0, ke=2e4, restitution=0.5, mu=0.4)
    b.add_shape_sphere((0, 0, 0), 0.5)
    body = b.add_body(kc.transform(kc.vec3(0.1, 0.75, 0.05), kc.quat(*_quat(0.2, (1, 0, 0)))))
    b.add_shape_mesh(CUBE_POINTS, CUBE_TRIS, scale=(0.4, 0.1, 0.3), body=body)
    w = np.array([[1.0, 0.6, -0.5, 0.2, 0.3, 0.1, 0.0]])
    grad, fd, states = _gradient_vs_fd(b, np.array([0.3, -1.0, 0.3, 1.0, 0.5, -1.0]), w, 250, 1e-3, 2e-4)
    assert min(np.linalg.norm(s.body_q.numpy()[0, :3]) for s in states) < 0.56   # it hit the sphere
    assert np.abs(fd).max() > 0.1
    np.testing.assert_allclose(grad, fd, rtol=0.05, atol=5e-3)


@pytest.mark.parametrize("moving", ["mesh", "sphere"])
def test_gradient_through_mesh_body_pair_contact_matches_finite_differences(moving):
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    b.set_material(0, ke=1e4, restitution=0.5, mu=0.3)
    b.add_body(kc.transform(kc.vec3(-0.3, 0.0, 0.0), kc.quat(*_quat(0.3, (0, 1, 1)))))
    if moving == "mesh":
        b.add_shape_mesh(CUBE_POINTS, CUBE_TRIS, scale=0.2, body=0)
    else:  # a sphere body against the mesh body: its centre against the mesh
        b.add_shape_sphere(radius=0.1, body=0)
    # both drift 1.5 m along z, three hash grid cells: the backward pass must rebuild each step's grid
    b.add_body(kc.transform(kc.vec3(0.3, 0.05, 0.0), kc.quat(0, 0, 0, 1)), vel=(0, 0, 5.0))
    b.add_shape_mesh(CUBE_POINTS, CUBE_TRIS, scale=(0.3, 0.2, 0.2), body=1)
    w = np.array([[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [1.0, 0.5, -0.4, 0.3, 0.2, 0.1, 0.0]])
    grad, fd, states = _gradient_vs_fd(b, np.array([1.5, 0.1, 5.0, 0.5, 0.0, 1.0]), w, 300, 1e-3, 2e-4)
    assert np.abs(states[-1].body_qd.numpy()[1, :3]).max() > 0.1   # they touched
    assert np.abs(fd).max() > 0.1
    np.testing.assert_allclose(grad, fd, rtol=0.05, atol=5e-3)


# -- bad input -------------------------------------------------------------------------------------

def _open_box():
    return CUBE_POINTS, CUBE_TRIS[:-2]  # the z = +0.5 face missing


@pytest.mark.parametrize("case, match", [
    ("open", r"add_shape_mesh: the mesh on body 0 is open \(4 edges.*density=1000.0 gives no mass"),
    ("inward", r"add_shape_mesh: the mesh on body 0 encloses volume -1 m\^3: wind its triangles"),
    ("repeated", r"add_shape_mesh: triangle 12 \[0, 0, 1\] is degenerate"),
    ("collinear", r"add_shape_mesh: triangle 12 \[0, 1, 8\] is degenerate"),
    ("no_body", r"add_shape_mesh: body 3 does not exist \(1 bodies"),
    ("flat_hull", r"add_shape_mesh: the points have no 3-d convex hull"),
    ("no_indices", r"add_shape_mesh: indices are required unless is_convex=True"),
    ("density", r"add_shape_mesh: density must be finite and > 0, got -1"),
])
def test_bad_body_meshes_are_rejected_naming_the_call(case, match):
    b = sim.ModelBuilder()
    body = b.add_body()
    pts, tris = CUBE_POINTS, CUBE_TRIS
    kw = dict(body=body)
    if case == "open":
        pts, tris = _open_box()
    elif case == "inward":
        tris = tris[:, ::-1]
    elif case == "repeated":
        tris = np.vstack([tris, [0, 0, 1]])
    elif case == "collinear":
        pts = np.vstack([pts, 2 * pts[1] - pts[0]])
        tris = np.vstack([tris, [0, 1, 8]])
    elif case == "no_body":
        kw["body"] = 3
    elif case == "flat_hull":
        pts, tris, kw["is_convex"] = CUBE_POINTS[:4], None, True
    elif case == "no_indices":
        tris = None
    elif case == "density":
        kw["density"] = -1.0
    with pytest.raises(ValueError, match=match):
        b.add_shape_mesh(pts, tris, **kw)


def test_open_mesh_is_allowed_on_a_body_with_a_given_mass():
    b = sim.ModelBuilder()
    body = b.add_body(mass=2.0, inertia=(0.1, 0.1, 0.1))
    pts, tris = _open_box()
    b.add_shape_mesh(pts, tris, body=body)
    m = b.finalize()
    assert m.body_mass.numpy()[0] == pytest.approx(2.0)


# -- particles -------------------------------------------------------------------------------------

def test_particles_rest_on_a_mesh_body_resting_on_the_ground():
    b = sim.ModelBuilder()
    b.set_material(0, ke=1e5, restitution=0.0, mu=0.5)
    b.set_ground_plane()
    box = b.add_body(kc.transform(kc.vec3(0, 0.1, 0), kc.quat(0, 0, 0, 1)))
    b.add_shape_mesh(CUBE_POINTS, CUBE_TRIS, scale=(0.4, 0.2, 0.4), body=box)
    b.add_particles([(-0.1, 0.3, 0.0), (0.1, 0.3, 0.05)], mass=0.5, radius=0.05)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m)
    s0, s1 = m.state(), m.state()
    for _ in range(2000):
        solver.step(m, s0, s1, None, 5e-4)
        s0, s1 = s1, s0
    np.testing.assert_allclose(s0.particle_q.numpy()[:, 1], 0.25, atol=1e-3)   # on the top face
    q = s0.body_q.numpy()[0]
    # the body carries their weight: it sinks by (m_box + 1 kg) g / (4 ke) on its four bottom corners
    sag = (m.body_mass.numpy()[0] + 1.0) * 9.81 / 4e5
    np.testing.assert_allclose(q[1], 0.1 - sag, atol=2e-4)
    assert np.abs(s0.body_qd.numpy()).max() < 1e-2


def test_particle_hitting_a_free_mesh_body_conserves_momentum():
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    b.set_material(0, ke=1e4, restitution=0.5, mu=0.3)
    body = b.add_body(kc.transform(kc.vec3(0, 0, 0), kc.quat(*_quat(0.6, (0, 1, 0)))))
    b.add_shape_mesh(CUBE_POINTS, CUBE_TRIS, scale=(0.2, 0.3, 0.2), body=body)
    b.add_particle((-0.5, 0.12, 0.05), (3.0, 0.0, 0.2), mass=0.5, radius=0.05)
    m = b.finalize()
    solver = sim.SolverSemiImplicit(m)
    s0, s1 = m.state(), m.state()
    mass = float(m.body_mass.numpy()[0])
    inertia = m.body_inertia.numpy()[0].astype(np.float64)

    def momenta(s):
        xp, vp = s.particle_q.numpy()[0].astype(np.float64), s.particle_qd.numpy()[0].astype(np.float64)
        q, qd = s.body_q.numpy()[0].astype(np.float64), s.body_qd.numpy()[0].astype(np.float64)
        rot = quat_to_matrix(q[3:])
        lin = 0.5 * vp + mass * qd[:3]
        ang = np.cross(xp, 0.5 * vp) + np.cross(q[:3], mass * qd[:3]) + rot @ inertia @ rot.T @ qd[3:]
        return lin, ang

    p0, l0 = momenta(s0)
    for _ in range(400):
        solver.step(m, s0, s1, None, 1e-3)
        s0, s1 = s1, s0
    p1, l1 = momenta(s0)
    assert np.linalg.norm(s0.body_qd.numpy()[0, :3]) > 0.1 and np.linalg.norm(s0.body_qd.numpy()[0, 3:]) > 0.1
    assert s0.particle_qd.numpy()[0, 0] < 2.0   # the particle bounced off
    np.testing.assert_allclose(p1, p0, atol=1e-4)
    np.testing.assert_allclose(l1, l0, atol=1e-4)


def test_wide_mesh_board_rests_on_a_small_static_box_and_ball():
    # no vertex of the board is above the box or the ball: their corners / centre must hold it
    b = sim.ModelBuilder()
    b.set_material(0, ke=1e5, restitution=0.0, mu=0.8)
    b.add_shape_box((0, -0.05, 0), half_extents=(0.05, 0.05, 0.05))
    b.add_shape_sphere((2, -0.1, 0), 0.1)
    for x in (0, 2):
        body = b.add_body(kc.transform(kc.vec3(x, 0.03, 0), kc.quat(0, 0, 0, 1)))
        b.add_shape_mesh(CUBE_POINTS, CUBE_TRIS, scale=(1.0, 0.05, 1.0), body=body, density=100.0)
    m, traj = _simulate(b, 1000, 1e-3, every=100)
    q, qd = traj[-1]
    np.testing.assert_allclose(q[:, :3], [(0, 0.025, 0), (2, 0.025, 0)], atol=2e-3)
    assert np.abs(qd).max() < 1e-2


@pytest.mark.parametrize("kind", ["box", "mesh"])
def test_body_rests_on_a_terrain_plateau_narrower_than_its_face(kind):
    # a 5 cm plateau on flat terrain, narrower than the body: only the terrain's vertices touch its face
    pts, tris = _grid_mesh(5, 5, 0.5, 0.5, lambda x, z: 0.05 * ((np.abs(x) < 0.15) & (np.abs(z) < 0.15)))
    b = sim.ModelBuilder()
    b.set_material(0, ke=1e5, restitution=0.0, mu=0.8)
    b.add_shape_mesh(pts, tris)
    body = b.add_body(kc.transform(kc.vec3(0, 0.11, 0), kc.quat(0, 0, 0, 1)))
    if kind == "box":
        b.add_shape_box(half_extents=(0.2, 0.05, 0.2), body=body, density=200.0)
    else:
        b.add_shape_mesh(CUBE_POINTS, CUBE_TRIS, scale=(0.4, 0.1, 0.4), body=body, density=200.0)
    m, traj = _simulate(b, 1600, 5e-4, every=100)
    q, qd = traj[-1]
    np.testing.assert_allclose(q[0, :3], (0, 0.1, 0), atol=2e-3)   # on the plateau's 4 vertices, not on the flat
    assert np.abs(qd[0]).max() < 1e-2
