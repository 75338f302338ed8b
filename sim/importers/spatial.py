"""Rotations and rigid transforms in float64 numpy for the importers.

Quaternions are (x, y, z, w) like ``kc.quat``; a transform is a pair (p (3,), q (4,)):
the frame's origin [m] and orientation in its parent frame.
"""
from __future__ import annotations

import math

import numpy as np

IDENTITY_QUAT = np.array([0.0, 0.0, 0.0, 1.0])


def quat_normalize(q):
    q = np.asarray(q, np.float64)
    return q / np.linalg.norm(q)


def quat_mul(a, b):
    """Hamilton product a * b (apply b first, then a)."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw,
                     aw * bw - ax * bx - ay * by - az * bz])


def quat_conj(q):
    return np.array([-q[0], -q[1], -q[2], q[3]], np.float64)


def quat_to_matrix(q):
    x, y, z, w = quat_normalize(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def quat_from_matrix(m):
    """Quaternion (x, y, z, w) of a rotation matrix (Shepperd's method, w >= 0)."""
    m = np.asarray(m, np.float64)
    t = np.trace(m)
    if t > 0:
        s = math.sqrt(t + 1.0) * 2
        q = [(m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s, 0.25 * s]
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2]) * 2
        q = [0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s, (m[2, 1] - m[1, 2]) / s]
    elif m[1, 1] > m[2, 2]:
        s = math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2]) * 2
        q = [(m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s, (m[0, 2] - m[2, 0]) / s]
    else:
        s = math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1]) * 2
        q = [(m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s, (m[1, 0] - m[0, 1]) / s]
    q = quat_normalize(q)
    return q if q[3] >= 0 else -q


def quat_from_axis_angle(axis, angle):
    a = np.asarray(axis, np.float64)
    a = a / np.linalg.norm(a)
    s = math.sin(0.5 * angle)
    return np.array([a[0] * s, a[1] * s, a[2] * s, math.cos(0.5 * angle)])


def quat_from_rpy(rpy):
    """URDF roll-pitch-yaw: rotations about the fixed X, then Y, then Z axes (R = Rz Ry Rx)."""
    r, p, y = rpy
    qx = quat_from_axis_angle((1, 0, 0), r)
    qy = quat_from_axis_angle((0, 1, 0), p)
    qz = quat_from_axis_angle((0, 0, 1), y)
    return quat_mul(qz, quat_mul(qy, qx))


def quat_from_euler(angles, seq):
    """Euler angles [rad] in MJCF's ``eulerseq``: a lower-case letter turns about an axis of the
    frame being rotated (intrinsic), an upper-case one about the fixed parent axis (extrinsic)."""
    q = IDENTITY_QUAT.copy()
    for angle, ch in zip(angles, seq):
        r = quat_from_axis_angle({"x": (1, 0, 0), "y": (0, 1, 0), "z": (0, 0, 1)}[ch.lower()], angle)
        q = quat_mul(q, r) if ch.islower() else quat_mul(r, q)
    return q


def quat_between(a, b):
    """Shortest rotation taking unit direction ``a`` to ``b``."""
    a = np.asarray(a, np.float64) / np.linalg.norm(a)
    b = np.asarray(b, np.float64) / np.linalg.norm(b)
    c = np.cross(a, b)
    d = float(np.dot(a, b))
    if d < -1.0 + 1e-12:  # opposite: half a turn about any axis normal to a
        perp = np.cross(a, (1.0, 0.0, 0.0))
        if np.linalg.norm(perp) < 1e-6:
            perp = np.cross(a, (0.0, 1.0, 0.0))
        return quat_from_axis_angle(perp, math.pi)
    return quat_normalize([c[0], c[1], c[2], 1.0 + d])


def rotate(q, v):
    return quat_to_matrix(q) @ np.asarray(v, np.float64)


def transform_mul(a, b):
    """Compose: the frame ``b`` given in frame ``a``, expressed in ``a``'s parent."""
    pa, qa = a
    pb, qb = b
    return (np.asarray(pa, np.float64) + rotate(qa, pb), quat_normalize(quat_mul(qa, qb)))


def transform_inverse(t):
    p, q = t
    qi = quat_conj(quat_normalize(q))
    return (-rotate(qi, p), qi)


def transform_identity():
    return (np.zeros(3), IDENTITY_QUAT.copy())


def as_transform(xform):
    """(p, q) from None, a (p, q) pair or 7 numbers (kc.transform)."""
    if xform is None:
        return transform_identity()
    flat = np.asarray([float(v) for v in (list(xform[0]) + list(xform[1]) if len(xform) == 2 else list(xform))],
                      np.float64)
    if flat.shape != (7,) or not np.all(np.isfinite(flat)) or np.linalg.norm(flat[3:]) < 1e-12:
        raise ValueError(f"xform must be a transform (p, q) with a non-zero quaternion (x, y, z, w), got {xform!r}")
    return (flat[:3], quat_normalize(flat[3:]))


def flat(t):
    """7 floats (p, q) of a transform, for builder calls."""
    return tuple(float(v) for v in np.concatenate([t[0], t[1]]))
