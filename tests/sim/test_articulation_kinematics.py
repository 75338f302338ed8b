"""Joints: builder API, forward/inverse kinematics against numpy 4x4 matrices, add_builder, bad input."""
import numpy as np
import pytest

import kernelcore as kc
import sim


def _rot(axis, angle):
    """Rotation matrix about unit ``axis`` (Rodrigues)."""
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    k = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def _qmat(q):
    x, y, z, w = np.asarray(q, float) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _h(t):
    """4x4 homogeneous matrix of a transform (p, q)."""
    m = np.eye(4)
    m[:3, :3] = _qmat(t[3:])
    m[:3, 3] = t[:3]
    return m


def _random_tf(rng, scale=0.5):
    q = rng.normal(size=4)
    return tuple(rng.uniform(-scale, scale, 3)) + tuple(q / np.linalg.norm(q))


def _random_tree(rng, n, kinds=("revolute", "prismatic", "ball", "fixed", "d6", "free_root")):
    """A random tree of n bodies; returns (builder, joint specs for the numpy reference)."""
    b = sim.ModelBuilder()
    specs = []
    for i in range(n):
        body = b.add_body(mass=1.0 + i, inertia=np.diag([0.1, 0.2, 0.25]), com=rng.uniform(-0.1, 0.1, 3))
        parent = -1 if i == 0 else int(rng.integers(0, i))
        xp, xc = _random_tf(rng), _random_tf(rng)
        kind = ("free" if "free_root" in kinds else "revolute") if i == 0 else \
            str(rng.choice([k for k in kinds if k != "free_root"]))
        axis = rng.normal(size=3)
        if kind == "revolute":
            q, qd = [rng.uniform(-2, 2)], [rng.normal()]
            b.add_joint_revolute(parent, body, xp, xc, axis=axis, q0=q[0], qd0=qd[0])
        elif kind == "prismatic":
            q, qd = [rng.uniform(-0.5, 0.5)], [rng.normal()]
            b.add_joint_prismatic(parent, body, xp, xc, axis=axis, q0=q[0], qd0=qd[0])
        elif kind == "ball":
            qq = rng.normal(size=4)
            q, qd = list(qq / np.linalg.norm(qq)), list(rng.normal(size=3))
            b.add_joint_ball(parent, body, xp, xc, q0=q, qd0=qd)
        elif kind == "fixed":
            q, qd = [], []
            b.add_joint_fixed(parent, body, xp, xc)
        elif kind == "d6":  # two orthonormal slides, one turn (eval_ik inverts that much)
            lin = np.linalg.qr(rng.normal(size=(3, 3)))[0][:, :2].T
            axis = np.concatenate([lin.ravel(), axis / np.linalg.norm(axis)])
            q, qd = list(rng.uniform(-0.5, 0.5, 3)), list(rng.normal(size=3))
            b.add_joint_d6(parent, body, linear_axes=lin, angular_axes=[axis[6:]], parent_xform=xp, child_xform=xc,
                           q0=q, qd0=qd)
        else:
            qq = rng.normal(size=4)
            q, qd = list(rng.normal(size=3)) + list(qq / np.linalg.norm(qq)), list(rng.normal(size=6))
            b.add_joint_free(body, parent, xp, xc, q0=q, qd0=qd)
        specs.append((kind, parent, body, xp, xc, axis / np.linalg.norm(axis) if kind != "d6" else axis, q, qd))
    return b, specs


def _numpy_fk(specs, n, com, q_override=None):
    """Body frames (n, 4, 4) by composing 4x4 matrices: X_body = X_parent X_p J(q) X_c^-1."""
    out = np.zeros((n, 4, 4))
    for idx, (kind, parent, body, xp, xc, axis, q, qd) in enumerate(specs):
        q = q if q_override is None else q_override[idx]
        j = np.eye(4)
        if kind == "revolute":
            j[:3, :3] = _rot(axis, q[0])
        elif kind == "prismatic":
            j[:3, 3] = axis * q[0]
        elif kind == "ball":
            j[:3, :3] = _qmat(q)
        elif kind == "free":
            j = _h(np.asarray(q))
        elif kind == "d6":
            j[:3, 3] = axis[0:3] * q[0] + axis[3:6] * q[1]
            j[:3, :3] = _rot(axis[6:9], q[2])
        base = np.eye(4) if parent < 0 else out[parent]
        out[body] = base @ _h(np.asarray(xp)) @ j @ np.linalg.inv(_h(np.asarray(xc)))
    return out


def _advance(kind, q, qd, h, xp_rot):
    """Coordinates after moving with velocity qd for time h (for finite-difference velocities)."""
    q = np.asarray(q, float)
    if kind in ("revolute", "prismatic", "d6"):
        return list(q + h * np.asarray(qd))
    if kind == "ball":  # angular velocity in the parent joint frame: left-multiply
        w = np.asarray(qd)
        dq = np.concatenate([np.sin(np.linalg.norm(w) * h / 2) * w / max(np.linalg.norm(w), 1e-30),
                             [np.cos(np.linalg.norm(w) * h / 2)]])
        from sim.builder.joints import quat_mul
        return list(quat_mul(dq, q))
    if kind == "free":
        return None  # handled by the caller through the body frame
    return list(q)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fk_matches_numpy_composition_of_transforms(seed):
    rng = np.random.default_rng(seed)
    n = 7
    b, specs = _random_tree(rng, n)
    m = b.finalize()
    state = m.state()
    sim.eval_fk(m, state.joint_q, state.joint_qd, state)
    com = m.body_com.numpy().astype(float)
    ref = _numpy_fk(specs, n, com)
    got = state.body_q.numpy().astype(float)
    for i in range(n):
        np.testing.assert_allclose(_h(got[i]), ref[i], atol=2e-5)
    # velocities: finite differences of the COM position and of the rotation along q + h qd
    h = 1e-4
    moved = []
    for kind, parent, body, xp, xc, axis, q, qd in specs:
        if kind == "free":  # translate the COM by h v and turn by h w about it (both in the parent joint frame)
            qv = np.asarray(q, float)
            r0 = _qmat(qv[3:])
            c_local = np.linalg.inv(_h(np.asarray(xc)))[:3, :3] @ com[body] + np.linalg.inv(_h(np.asarray(xc)))[:3, 3]
            c0 = qv[:3] + r0 @ c_local
            from sim.builder.joints import quat_mul
            w = np.asarray(qd[3:])
            dq = np.concatenate([np.sin(np.linalg.norm(w) * h / 2) * w / np.linalg.norm(w),
                                 [np.cos(np.linalg.norm(w) * h / 2)]])
            q1 = quat_mul(dq, qv[3:])
            c1 = c0 + h * np.asarray(qd[:3])
            p1 = c1 - _qmat(q1) @ c_local
            moved.append(list(p1) + list(q1))
        else:
            moved.append(_advance(kind, q, qd, h, None))
    ref1 = _numpy_fk(specs, n, com, moved)
    qd_got = state.body_qd.numpy().astype(float)
    for i in range(n):
        c0 = ref[i][:3, :3] @ com[i] + ref[i][:3, 3]
        c1 = ref1[i][:3, :3] @ com[i] + ref1[i][:3, 3]
        dr = (ref1[i][:3, :3] - ref[i][:3, :3]) / h @ ref[i][:3, :3].T
        w = np.array([dr[2, 1] - dr[1, 2], dr[0, 2] - dr[2, 0], dr[1, 0] - dr[0, 1]]) / 2
        np.testing.assert_allclose(qd_got[i, :3], (c1 - c0) / h, atol=2e-3, rtol=1e-3)
        np.testing.assert_allclose(qd_got[i, 3:], w, atol=2e-3, rtol=1e-3)


@pytest.mark.parametrize("seed", [0, 3])
def test_ik_inverts_fk(seed):
    rng = np.random.default_rng(seed)
    b, specs = _random_tree(rng, 6)
    m = b.finalize()
    state = m.state()
    sim.eval_fk(m, state.joint_q, state.joint_qd, state)
    q = kc.zeros(m.joint_coord_count, dtype=float)
    qd = kc.zeros(m.joint_dof_count, dtype=float)
    sim.eval_ik(m, state, q, qd)
    q0, q1 = m.joint_q.numpy(), q.numpy()
    starts = m.joint_q_start.numpy()
    types = m.joint_type.numpy()
    for j in range(m.joint_count):
        a, e = q0[starts[j]:starts[j + 1]], q1[starts[j]:starts[j + 1]]
        if types[j] in (sim.JOINT_BALL, sim.JOINT_FREE):  # a quaternion and its negative are the same rotation
            if np.dot(a[-4:], e[-4:]) < 0:
                e = np.concatenate([e[:-4], -e[-4:]])
        elif types[j] == sim.JOINT_REVOLUTE:
            e = a + (np.asarray(e) - a + np.pi) % (2 * np.pi) - np.pi  # same angle mod 2 pi
        np.testing.assert_allclose(e, a, atol=5e-5)
    np.testing.assert_allclose(qd.numpy(), m.joint_qd.numpy(), atol=2e-4)


def test_free_joint_coordinates_are_the_body_pose_and_finalize_places_bodies():
    b = sim.ModelBuilder()
    body = b.add_body(xform=(1.0, 2.0, 3.0, 0.0, 0.0, np.sin(0.2), np.cos(0.2)), mass=2.0,
                      inertia=np.eye(3) * 0.1, vel=(0.1, 0.2, 0.3), ang_vel=(0.0, 1.0, 0.0))
    b.add_joint_free(body)
    np.testing.assert_allclose(b.joint_q, [1, 2, 3, 0, 0, np.sin(0.2), np.cos(0.2)], atol=1e-12)
    np.testing.assert_allclose(b.joint_qd, [0.1, 0.2, 0.3, 0, 1, 0])
    arm = b.add_body(mass=1.0, inertia=np.eye(3) * 0.1)
    b.add_joint_revolute(body, arm, parent_xform=(0.5, 0, 0, 0, 0, 0, 1), q0=np.pi / 2)
    m = b.finalize()
    x = m.body_q.numpy()
    np.testing.assert_allclose(x[0], [1, 2, 3, 0, 0, np.sin(0.2), np.cos(0.2)], atol=1e-6)
    # the arm's frame: body frame * (0.5, 0, 0) then a quarter turn about z
    np.testing.assert_allclose(x[1][:3], [1 + 0.5 * np.cos(0.4), 2 + 0.5 * np.sin(0.4), 3], atol=1e-6)
    np.testing.assert_allclose(abs(x[1][5]), np.sin(0.2 + np.pi / 4), atol=1e-6)
    np.testing.assert_allclose(m.body_qd.numpy()[0], [0.1, 0.2, 0.3, 0, 1, 0], atol=1e-6)


def test_model_state_and_control_joint_fields():
    b = sim.ModelBuilder()
    b0 = b.add_body(mass=1.0, inertia=np.eye(3))
    b1 = b.add_body(mass=1.0, inertia=np.eye(3))
    b.add_joint_ball(-1, b0)
    b.add_joint_revolute(b0, b1, target_ke=10.0, target_kd=1.0, target_pos=0.5, limit_lower=-1.0, limit_upper=1.0,
                         armature=0.01, damping=0.2)
    m = b.finalize()
    assert (m.joint_count, m.joint_coord_count, m.joint_dof_count, m.articulation_count) == (2, 5, 4, 1)
    np.testing.assert_array_equal(m.joint_q_start.numpy(), [0, 4, 5])
    np.testing.assert_array_equal(m.joint_qd_start.numpy(), [0, 3, 4])
    np.testing.assert_array_equal(m.articulation_start.numpy(), [0, 2])
    np.testing.assert_allclose(m.joint_target_ke.numpy(), [0, 0, 0, 10])
    np.testing.assert_allclose(m.joint_limit_lower.numpy()[3], -1.0)
    s, c = m.state(), m.control()
    np.testing.assert_allclose(s.joint_q.numpy(), [0, 0, 0, 1, 0])
    assert s.joint_qd.shape == (4,) and c.joint_f.shape == (4,)
    np.testing.assert_allclose(c.joint_target_pos.numpy(), [0, 0, 0, 0.5])


def test_add_builder_replicates_environments_with_offsets():
    env = sim.ModelBuilder()
    cart = env.add_body(mass=1.0, inertia=np.eye(3) * 0.1)
    pole = env.add_body(mass=0.5, inertia=np.eye(3) * 0.05)
    env.add_shape_box(half_extents=(0.1, 0.1, 0.1), body=cart)
    env.add_joint_prismatic(-1, cart, axis=(1, 0, 0), q0=0.2)
    env.add_joint_revolute(cart, pole, parent_xform=(0, 0.1, 0, 0, 0, 0, 1), q0=0.3)
    env.add_particle((0, 1, 0))
    env.add_particle((0, 2, 0))
    env.add_spring(0, 1, ke=10.0)
    b = sim.ModelBuilder()
    b.set_ground_plane()
    for i in range(3):
        w = b.add_builder(env, xform=(2.0 * i, 0, 0, 0, 0, 0, 1))
        assert w == i
    m = b.finalize()
    assert (m.body_count, m.joint_count, m.shape_count, m.particle_count, m.spring_count) == (6, 6, 3, 6, 3)
    assert m.articulation_count == 3 and m.num_worlds == 3
    np.testing.assert_array_equal(m.joint_parent.numpy(), [-1, 0, -1, 2, -1, 4])
    np.testing.assert_array_equal(m.shape_body.numpy(), [0, 2, 4])
    np.testing.assert_array_equal(m.shape_world.numpy(), [0, 1, 2])
    np.testing.assert_array_equal(m.spring_indices.numpy(), [0, 1, 2, 3, 4, 5])
    np.testing.assert_allclose(m.joint_q.numpy(), [0.2, 0.3] * 3, atol=1e-7)
    x = m.body_q.numpy()
    np.testing.assert_allclose(x[::2, 0], [0.2, 2.2, 4.2], atol=1e-6)
    np.testing.assert_allclose(m.particle_q.numpy()[::2, 0], [0, 2, 4])


def test_environments_do_not_collide_with_each_other():
    from sim.collide_bodies import body_static_pairs

    env = sim.ModelBuilder()
    body = env.add_body(mass=1.0)
    env.add_shape_sphere(radius=0.1, body=body)
    env.add_shape_box(pos=(0, -0.2, 0), half_extents=(1, 0.1, 1))  # a static floor of this environment
    b = sim.ModelBuilder()
    b.add_builder(env)
    b.add_builder(env)  # the same place: only the world index keeps them apart
    m = b.finalize()
    shape, static = (a.numpy() for a in body_static_pairs(m))
    assert sorted(zip(shape.tolist(), static.tolist())) == [(0, 1), (2, 3)]
    # body-body contacts: two overlapping spheres of different environments feel nothing
    solver = sim.SolverSemiImplicit(m)
    s0, s1 = m.state(), m.state()
    solver.body_pairs.eval(m, s0, s1.body_f, 1e-3)
    np.testing.assert_array_equal(s1.body_f.numpy(), 0.0)


def test_begin_world_tags_bodies_and_shapes():
    b = sim.ModelBuilder()
    shared = b.add_body(mass=1.0)
    b.add_shape_sphere(radius=0.1, body=shared)
    assert b.begin_world() == 0
    body = b.add_body(mass=1.0)
    b.add_shape_sphere(radius=0.1, body=body)
    b.end_world()
    b.add_shape_box(half_extents=(1, 1, 1))
    m = b.finalize()
    np.testing.assert_array_equal(m.body_world.numpy(), [-1, 0])
    np.testing.assert_array_equal(m.shape_world.numpy(), [-1, 0, -1])
    assert m.num_worlds == 1


def test_bad_joint_input_names_the_call():
    b = sim.ModelBuilder()
    b0 = b.add_body(mass=1.0, inertia=np.eye(3))
    b1 = b.add_body(mass=1.0, inertia=np.eye(3))
    b2 = b.add_body(mass=1.0, inertia=np.eye(3))
    b.add_joint_revolute(-1, b0)
    b.add_joint_revolute(b0, b1)
    with pytest.raises(ValueError, match=r"add_joint_revolute: body 1 .*already has a parent"):
        b.add_joint_revolute(b2, b1)
    b3 = b.add_body(mass=1.0, inertia=np.eye(3))
    cyc = b.add_joint_revolute(b2, b3)
    with pytest.raises(ValueError, match=r"add_joint_ball: joint from body 3 to body 2 would close a cycle"):
        b.add_joint_ball(b3, b2)
    for lst in ("type", "parent", "child", "X_p", "X_c", "name", "q_start", "qd_start", "dof_dim", "world"):
        getattr(b, "joint_" + lst).pop(cyc)  # undo the helper joint
    for lst in ("q", "qd", "axis", "limit_lower", "limit_upper", "limit_ke", "limit_kd", "target_ke", "target_kd",
                "target_pos", "target_vel", "armature", "damping", "effort_limit"):
        getattr(b, "joint_" + lst).pop()
    with pytest.raises(ValueError, match=r"add_joint_prismatic: axis .* zero length"):
        b.add_joint_prismatic(b1, b2, axis=(0, 0, 0))
    with pytest.raises(ValueError, match=r"add_joint_revolute: child body 7 does not exist"):
        b.add_joint_revolute(b1, 7)
    with pytest.raises(ValueError, match=r"add_joint_fixed: parent body -3 does not exist"):
        b.add_joint_fixed(-3, b2)
    with pytest.raises(ValueError, match=r"add_joint_revolute: limit_lower 1.0 is above limit_upper -1.0"):
        b.add_joint_revolute(b1, b2, limit_lower=1.0, limit_upper=-1.0)
    with pytest.raises(ValueError, match=r"add_joint_revolute: target_ke must be finite and >= 0"):
        b.add_joint_revolute(b1, b2, target_ke=-1.0)
    with pytest.raises(ValueError, match=r"add_joint_free: q0 must be 7 finite numbers"):
        b.add_joint_free(b2, q0=(0, 0, 0))
    # a parent joint added after its child's
    c = sim.ModelBuilder()
    c0 = c.add_body(mass=1.0, inertia=np.eye(3))
    c1 = c.add_body(mass=1.0, inertia=np.eye(3))
    c.add_joint_revolute(c0, c1)
    c.add_joint_revolute(-1, c0)
    with pytest.raises(ValueError, match=r"finalize: joint 0 .*comes before the joint of its parent body 0"):
        c.finalize()
    m = b.finalize()
    with pytest.raises(ValueError, match=r"eval_fk: joint_q must have 2 entries"):
        sim.eval_fk(m, kc.zeros(3, dtype=float), m.joint_qd, m.state())
