"""Library cloth scenes (scenes/library/cloth_flag.usda, cloth_fold.usda) load and run: finite, the wind
blows the flag, the strip falling onto itself never has an edge through a triangle."""
import os
import sys

import numpy as np
import pytest

import scenes
from sim.solvers.xpbd import mesh_edges

pytest.importorskip("pxr")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "sim"))
from test_cloth_contact import edge_triangle_crossings  # noqa: E402

LIBRARY = os.path.join(os.path.dirname(__file__), "..", "..", "scenes", "library")


def frames(path, count, check=None):
    """Load a library scene and step it ``count`` frames; ``check(frame, q)`` after each frame."""
    scene = scenes.load(os.path.join(LIBRARY, path))
    model = scene.builder.finalize()
    solver = scene.make_solver(model)
    s0, s1 = model.state(), model.state()
    for f in range(count):
        for _ in range(scene.substeps):
            solver.step(model, s0, s1, None, scene.dt)
            s0, s1 = s1, s0
        q = s0.particle_q.numpy()
        assert np.all(np.isfinite(q)), f"frame {f}"
        if check is not None:
            check(f, q)
    return scene, model, s0


def test_flag_on_a_pole_is_blown_by_the_wind():
    scene, model, s = frames("cloth_flag.usda", 8)
    q0, q = model.particle_q.numpy(), s.particle_q.numpy()
    pinned = model.particle_inv_mass.numpy() == 0
    assert pinned.sum() == 9
    np.testing.assert_allclose(q[pinned], q0[pinned])        # held on the pole
    # the wind (4, 0, 1) m/s pushes the flag out of its plane z = 0 (without wind it stays in it by symmetry)
    assert q[~pinned, 2].mean() > 0.01
    assert q[:, 0].min() >= 0.0 and q[:, 1].min() > 1.0    # still hanging from the pole, not fallen
    assert model.air_velocity[0] == pytest.approx(4.0)


def test_cloth_falling_onto_itself_never_crosses():
    scene = scenes.load(os.path.join(LIBRARY, "cloth_fold.usda"))
    assert scene.cloth_self_contact > 0
    tris = None
    crossings = []

    def check(f, q):
        crossings.append(edge_triangle_crossings(q, tris, edges))

    (rng, tris_local), = scene.cloth_groups.values()
    tris = tris_local + rng.start
    edges = mesh_edges(tris)
    _, _, s = frames("cloth_fold.usda", 30, check)
    q = s.particle_q.numpy()
    assert q[:, 1].max() < 0.4          # it did fall ...
    assert q[:, 1].min() > 0.0          # ... onto the ground
    assert crossings == [0] * 30


def test_vbd_scene_drapes_the_sphere_and_takes_self_contact(tmp_path):
    text = open(os.path.join(LIBRARY, "cloth_drape.usda")).read()
    assert "float kc:cloth:selfContact = 0.006" in text
    vbd = text.replace("float kc:cloth:selfContact = 0.006", 'token kc:solver = "vbd"').replace(
        "int kc:substeps = 24", "int kc:substeps = 4")
    p = tmp_path / "drape_vbd.usda"
    p.write_text(vbd)
    scene = scenes.load(str(p))
    model = scene.builder.finalize()
    solver = scene.make_solver(model)
    assert type(solver).__name__ == "SolverVBD"
    s0, s1 = model.state(), model.state()
    for _ in range(30 * scene.substeps):
        solver.step(model, s0, s1, None, scene.dt)
        s0, s1 = s1, s0
    q = s0.particle_q.numpy()
    assert np.all(np.isfinite(q))
    # the sphere of the scene: radius 0.2 at (0, 0.3, 0); no vertex inside by more than the thickness
    assert (np.linalg.norm(q - (0, 0.3, 0), axis=1) - 0.2).min() > -0.006
    assert q[:, 1].max() > 0.45          # resting on top of it
    # kc:cloth:selfContact with the VBD solver: its self-contact, with the scene's thickness
    p.write_text(vbd.replace('token kc:solver = "vbd"', 'token kc:solver = "vbd"\n        float kc:cloth:selfContact = 0.006'))
    solver = scenes.load(str(p)).make_solver(model)
    assert type(solver).__name__ == "SolverVBD" and solver.self_contact.thickness == pytest.approx(0.006)
