"""Adversarial checks of session 16: input that used to crash the process or pass silently."""
import numpy as np
import pytest

import kernelcore as kc
import sim


def _line_of(text, path=__file__):
    src = open(path).read().splitlines()
    return 1 + next(k for k, s in enumerate(src) if s.strip() == text)


# ----------------------------------------------------------------- eval_fk / eval_ik input
def _pendulum():
    b = sim.ModelBuilder()
    b0 = b.add_body(mass=1.0, inertia=np.eye(3) * 0.1)
    b1 = b.add_body(mass=1.0, inertia=np.eye(3) * 0.1)
    b.add_joint_revolute(-1, b0, (0, 0, 0, 0, 0, 0, 1), (0, 0, 0, 0, 0, 0, 1), axis=(0, 0, 1), q0=0.3)
    b.add_joint_revolute(b0, b1, (1, 0, 0, 0, 0, 0, 1), (0, 0, 0, 0, 0, 0, 1), axis=(0, 1, 0), q0=-0.2)
    return b.finalize()


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_eval_fk_refuses_a_non_finite_joint_q_naming_argument_and_index(bad):
    m = _pendulum()
    st = m.state()
    before = st.body_q.numpy().copy()
    q = np.array([0.1, bad])
    with pytest.raises(ValueError, match=r"eval_fk: joint_q\[1\] is not finite"):
        sim.eval_fk(m, kc.array(q, dtype=float), m.joint_qd, st)
    np.testing.assert_array_equal(st.body_q.numpy(), before)  # nothing written
    with pytest.raises(ValueError, match=r"eval_fk: joint_qd\[0\] is not finite"):
        sim.eval_fk(m, m.joint_q, kc.array(np.array([bad, 0.0]), dtype=float), st)
    sim.eval_fk(m, kc.array(np.array([0.1, 0.2]), dtype=float), m.joint_qd, st)  # finite: runs
    q_out, qd_out = kc.zeros(2, dtype=float), kc.zeros(2, dtype=float)
    sim.eval_ik(m, st, q_out, qd_out)
    np.testing.assert_allclose(q_out.numpy(), [0.1, 0.2], atol=1e-5)


def test_eval_ik_refuses_a_non_finite_body_q_naming_argument_and_index():
    m = _pendulum()
    st = m.state()
    sim.eval_fk(m, m.joint_q, m.joint_qd, st)
    bq = st.body_q.numpy().copy()
    bq[1, 4] = np.nan
    st.body_q.assign(bq)
    q_out, qd_out = kc.zeros(2, dtype=float), kc.zeros(2, dtype=float)
    with pytest.raises(ValueError, match=r"eval_ik: state.body_q\[1\] is not finite"):
        sim.eval_ik(m, st, q_out, qd_out)
