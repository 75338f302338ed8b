"""Per-step contact arrays: what the contact generation found, kept for the force kernels and for users.

A contact-generation launch writes every candidate contact of a step into fixed slots
(one per candidate pair and contact point, so the layout does not depend on thread
order); the force launch reads them.  The solver keeps one :class:`Contacts` per output
state (``state_out.contacts``, made the first time a step writes into that state), so a
recorded step's contacts are never overwritten by a later step and a Tape replays the
force kernel's adjoint on exactly the contacts its forward used, then the generation's
adjoint carries the gradient on to ``body_q``.

Fields (``C = capacity`` slots):
    active: int (C,) — 1 where the slot holds a contact this step (touching, or within the
        distance the contact law's onset smoothing reaches, see sim/contact.py), else 0.
    point: vec3 (C,) — contact point on the surface of shape_a [m], world.
    normal: vec3 (C,) — unit normal pointing from shape_b to shape_a, world.
    depth: float (C,) — penetration depth [m] (> 0: overlapping; < 0: the gap of a contact
        about to start).
    shape_a: int (C,) — the body shape; shape_b: int (C,) — the other shape (-1: the ground).
    count: int (1,) — number of active slots.
    overflow: int (OVERFLOW_FAMILIES,) — per contact family (OVERFLOW_BODY_PAIR, OVERFLOW_MESH_STATIC,
        OVERFLOW_MESH_PAIR, OVERFLOW_MESH_EDGE), the contacts found that had no free slot.  The
        solver shares one such array between ``state_out.contacts`` and
        ``state_out.body_pair_contacts``, zeroes it once per step and reads it back once
        (:func:`check_contact_overflow`), raising an error that names the family and the
        argument that sizes its slots.

The solver keeps body-static contacts in ``state_out.contacts`` and body-body contacts in
``state_out.body_pair_contacts`` (there ``shape_a`` and ``shape_b`` are both body shapes).
Contacts with triangle meshes (sim/collide_body_mesh.py, sim/collide_mesh_edges.py) are in
the same arrays, in the slots after the sphere/box/capsule ones.

``contacts.numpy()`` gives the active contacts as numpy arrays (a dict with the same
names), for inspection; it reads back to the host, so call it outside the step loop's
hot path.
"""
from __future__ import annotations

import numpy as np

import kernelcore as kc


#: contact families with an overflow counter each (index into ``Contacts.overflow``)
OVERFLOW_BODY_PAIR = kc.constant(0)    # sphere/box/capsule body pairs: SolverSemiImplicit(body_pair_slots=)
OVERFLOW_MESH_STATIC = kc.constant(1)  # static mesh vertices under a body shape: mesh_contact_slots
OVERFLOW_MESH_PAIR = kc.constant(2)    # shapes at one vertex of a mesh body: mesh_contact_slots
OVERFLOW_MESH_EDGE = kc.constant(3)    # sharp mesh edges met by one body shape or edge: mesh_contact_slots
OVERFLOW_FAMILIES = 4


@kc.func
def write_contact_slot(used: int, base: int, slots: int, contact: kc.vec3, n: kc.vec3, gap: float, sa: int, sb: int,
                       active: kc.array(dtype=int), point: kc.array(dtype=kc.vec3),
                       normal: kc.array(dtype=kc.vec3), depth: kc.array(dtype=float),
                       shape_a: kc.array(dtype=int), shape_b: kc.array(dtype=int), count: kc.array(dtype=int),
                       overflow: kc.array(dtype=int), family: int) -> int:
    """Write one contact into a thread's next free slot ``base + used`` of ``slots`` and return the new ``used``.

    ``contact`` [m] on shape ``sa``'s surface, unit ``n`` from ``sb`` to ``sa``, ``gap`` [m] (< 0:
    overlap).  Bumps ``count``; a contact with no free slot is not written and bumps
    ``overflow[family]`` instead (one counter per contact family, see OVERFLOW_FAMILIES), so the
    caller can raise an error naming the argument that sizes that family's slots."""
    if used < slots:
        slot = base + used
        active[slot] = 1
        point[slot] = contact
        normal[slot] = n
        depth[slot] = -gap
        shape_a[slot] = sa
        shape_b[slot] = sb
        kc.atomic_add(count, 0, 1)
    else:
        kc.atomic_add(overflow, family, 1)
    return used + 1


class Contacts:
    """Contact arrays of one step (see the module docstring)."""

    def __init__(self, capacity: int, device, requires_grad: bool = False, overflow=None):
        self.capacity = int(capacity)
        n = max(self.capacity, 1)
        self.active = kc.zeros(n, dtype=kc.int32, device=device)
        self.point = kc.zeros(n, dtype=kc.vec3, device=device, requires_grad=requires_grad)
        self.normal = kc.zeros(n, dtype=kc.vec3, device=device, requires_grad=requires_grad)
        self.depth = kc.zeros(n, dtype=float, device=device, requires_grad=requires_grad)
        self.shape_a = kc.zeros(n, dtype=kc.int32, device=device)
        self.shape_b = kc.zeros(n, dtype=kc.int32, device=device)
        self.count = kc.zeros(1, dtype=kc.int32, device=device)
        # shared with another Contacts when given (the solver's one counter array per step)
        self.overflow = overflow if overflow is not None else kc.zeros(OVERFLOW_FAMILIES, dtype=kc.int32,
                                                                       device=device)

    def numpy(self) -> dict:
        """The active contacts: {"count", "point" (n, 3), "normal" (n, 3), "depth" (n,), "shape_a", "shape_b"}."""
        on = self.active.numpy()[:self.capacity] != 0
        return {"count": int(self.count.numpy()[0]),
                "point": self.point.numpy()[:self.capacity][on],
                "normal": self.normal.numpy()[:self.capacity][on],
                "depth": self.depth.numpy()[:self.capacity][on],
                "shape_a": self.shape_a.numpy()[:self.capacity][on],
                "shape_b": self.shape_b.numpy()[:self.capacity][on]}


def state_contacts(state, capacity: int, device, requires_grad: bool, name: str = "contacts",
                   overflow=None) -> Contacts:
    """``state.<name>`` (``contacts``: body-static, ``body_pair_contacts``: body-body), made (once per
    state) when missing or of another capacity; ``overflow``: the counter array it shares (None: its own)."""
    c = getattr(state, name, None)
    if c is None or c.capacity != capacity:
        c = Contacts(capacity, device, requires_grad, overflow)
        setattr(state, name, c)
    elif overflow is not None:
        c.overflow = overflow
    return c


def check_contact_overflow(overflow, body_pairs=None, meshes=None):
    """Read ``overflow`` (int (OVERFLOW_FAMILIES,)) back once and raise a RuntimeError for the first family
    whose contacts did not fit, with the message of its owner: ``body_pairs``
    (sim.collide_body_pairs.BodyPairContacts) for OVERFLOW_BODY_PAIR, ``meshes``
    (sim.collide_body_mesh.BodyMeshContacts) for the mesh families."""
    counts = overflow.numpy()
    for family in range(OVERFLOW_FAMILIES):
        dropped = int(counts[family])
        if dropped:
            owner = body_pairs if family == int(OVERFLOW_BODY_PAIR) else meshes
            raise RuntimeError(owner.overflow_message(family, dropped))
