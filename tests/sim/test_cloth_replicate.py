"""add_builder copies cloth: two replicated cloths step exactly like the same two cloths built directly."""
import numpy as np

import sim


def _cloth(builder, x):
    builder.add_cloth_grid(pos=(x, 1.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0), vel=(0.0, 0.0, 0.0), dim_x=3, dim_y=2,
                           cell_x=0.1, cell_y=0.1, mass=0.01, fix_left=True, tri_ke=50.0, tri_ka=50.0,
                           edge_ke=0.01)


def test_add_builder_copies_cloth_topology_and_rest_shape():
    env = sim.ModelBuilder()
    _cloth(env, 0.0)
    replicated = sim.ModelBuilder()
    replicated.add_builder(env, xform=(0, 0, 0, 0, 0, 0, 1), separate_world=False)
    replicated.add_builder(env, xform=(2.0, 0, 0, 0, 0, 0, 1), separate_world=False)
    direct = sim.ModelBuilder()
    _cloth(direct, 0.0)
    _cloth(direct, 2.0)
    a, b = replicated.finalize(), direct.finalize()
    assert a.tri_count == b.tri_count == 2 * env.tri_count > 0
    assert a.edge_count == b.edge_count == 2 * env.edge_count > 0
    for name in ("tri_indices", "tri_poses", "tri_areas", "tri_materials", "edge_indices", "edge_rest_angle",
                 "edge_bending_properties", "particle_q", "particle_mass"):
        np.testing.assert_allclose(getattr(a, name).numpy(), getattr(b, name).numpy(), rtol=1e-6, atol=1e-7,
                                   err_msg=name)
    solver_a, solver_b = sim.SolverSemiImplicit(a), sim.SolverSemiImplicit(b)
    sa, sb = [a.state(), a.state()], [b.state(), b.state()]
    for k in range(20):
        solver_a.step(a, sa[k % 2], sa[(k + 1) % 2], None, 1e-3)
        solver_b.step(b, sb[k % 2], sb[(k + 1) % 2], None, 1e-3)
    np.testing.assert_allclose(sa[0].particle_q.numpy(), sb[0].particle_q.numpy(), rtol=0, atol=1e-6)
