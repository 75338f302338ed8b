"""The ``kc:`` attribute schema of scene files, and "did you mean" suggestions.

Every attribute of our own namespace that a prim may carry is listed here with the
prims it applies to, so that the loader can tell a misspelling (``kc:subteps``) or an
attribute on the wrong prim (``kc:radius`` on a Cube) from one it reads.  Attributes of
other namespaces (UsdGeom, UsdPhysics, ...) are checked by the loader against what it
actually reads (see ``usd_loader._Reader.check_unused``).
"""
from __future__ import annotations

import difflib

MATERIAL = ("kc:material:ke", "kc:material:restitution", "kc:material:mu", "kc:material:cohesion",
            "kc:material:cohesionDistance")

# MPM settings (read by scenes/usd_mpm.py in kc:solver = "mpm" scenes)
SCENE_MPM = ("kc:mpm:dx", "kc:mpm:lower", "kc:mpm:upper", "kc:mpm:dim", "kc:mpm:boundary", "kc:mpm:friction",
             "kc:mpm:cfl")
POINTS_MPM = ("kc:mpm:material", "kc:mpm:volume", "kc:mpm:youngsModulus", "kc:mpm:poissonRatio",
              "kc:mpm:hardening", "kc:mpm:criticalCompression", "kc:mpm:criticalStretch", "kc:mpm:frictionAngle",
              "kc:mpm:viscosity")

#: prim kind -> the kc: attributes it accepts
KC_ATTRIBUTES = {
    "PhysicsScene": ("kc:timeStep", "kc:substeps", "kc:solver", "kc:frames", "kc:particleDamping",
                     "kc:toi", "kc:fluid:smoothingLength", "kc:fluid:lower", "kc:fluid:upper", "kc:fluid:restDensity",
                     "kc:fluid:iterations", "kc:fluid:xsph", "kc:fluid:vorticity", "kc:cloth:selfContact",
                     "kc:cloth:wind") + SCENE_MPM,
    "Points": ("kc:grid:dims", "kc:grid:spacing", "kc:grid:lower", "kc:grid:jitter", "kc:grid:seed",
               "kc:velocity", "kc:radius", "kc:mass", "kc:density", "kc:fixedIndices", "kc:springs:indices",
               "kc:springs:grid", "kc:springs:shear", "kc:springs:ke", "kc:springs:kd") + MATERIAL
              + POINTS_MPM,
    "collider": MATERIAL,
    "robot": ("kc:robot", "kc:robot:floating"),
    # a Cube prim with kc:mpm:material in a kc:solver = "mpm" scene: filled with particles
    "mpm Cube": ("kc:mpm:spacing", "kc:density", "kc:velocity") + tuple(a for a in POINTS_MPM if a != "kc:mpm:volume"),
    "Cloth": ("kc:cloth", "kc:cloth:density", "kc:cloth:triKe", "kc:cloth:triKa", "kc:cloth:triKd", "kc:cloth:edgeKe",
              "kc:cloth:edgeKd", "kc:cloth:triDrag", "kc:cloth:triLift", "kc:radius", "kc:velocity",
              "kc:fixedIndices") + MATERIAL,
}

ALL_KC = sorted({a for names in KC_ATTRIBUTES.values() for a in names})

#: prim types the loader knows (for suggestions on a misspelled type name)
KNOWN_TYPES = ("Points", "Mesh", "Cube", "Sphere", "Capsule", "Plane", "Xform", "Scope", "PhysicsScene", "Material")


def suggest(name: str, candidates) -> str:
    """``"; did you mean 'x'?"`` for the closest candidate, or "" when none is close."""
    match = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f"; did you mean '{match[0]}'?" if match else ""


def kinds_accepting(attr: str) -> list:
    """Prim kinds whose schema lists ``attr``."""
    return [k for k, names in KC_ATTRIBUTES.items() if attr in names]


def check_kc_attribute(attr: str, kind: str):
    """None when ``attr`` belongs on a prim of ``kind``, else the problem as a sentence."""
    allowed = KC_ATTRIBUTES.get(kind, ())
    if attr in allowed:
        return None
    others = kinds_accepting(attr)
    if others:
        where = ", ".join("collider prims" if k == "collider" else f"{k} prims" for k in others)
        what = "a collider" if kind == "collider" else (f"a {kind} prim" if kind else "this prim")
        return f"attribute '{attr}' does not apply to {what} (it is read on {where})"
    return f"unknown attribute '{attr}'{suggest(attr, allowed or ALL_KC) or suggest(attr, ALL_KC)}"
