"""Array element access and atomics (native/kc_array.h).

Reads scatter their adjoint into ``array.grad``; writes and atomic adds gather it back,
following the seeds' semantics.  ``a[i] += x`` is an atomic add.  Every atomic returns
the value the element held before the update.
"""
from .registry import register

for n in range(1, 5):
    idx = ["int32"] * n
    register("load", ["array(T)"] + idx, "T", array_access=True)
    value_unread = (n + 1,)  # the adjoints of store/atomic_add/atomic_sub only read the gradient array
    register("store", ["array(T)"] + idx + ["T"], None, side_effect=True, array_access=True, adj_ignores=value_unread)
    for op in ("atomic_add", "atomic_sub"):
        register(op, ["array(T)"] + idx + ["T"], "T", side_effect=True, array_access=True, adj_ignores=value_unread,
                 doc=f"{op}(arr, i.., value) -> old value (composites: component by component)")
    for op in ("atomic_min", "atomic_max"):
        for t in ("S", "vec(N,S)"):
            register(op, [f"array({t})"] + idx + [t], t, side_effect=True, array_access=True,
                     doc=f"{op}(arr, i.., value) -> old value (vectors: component by component)")
    register("atomic_cas", ["array(S)"] + idx + ["S", "S"], "S", side_effect=True, array_access=True,
             differentiable=False, doc="compare-and-swap: (arr, i.., compare, value) -> old value")
    register("atomic_exch", ["array(S)"] + idx + ["S"], "S", side_effect=True, array_access=True,
             differentiable=False, doc="exchange: (arr, i.., value) -> old value")


def _view_result(types, bindings):
    from ..array import ArrayType

    return ArrayType(types[0].dtype, types[0].ndim - 1)


register("view", ["array(T)", "int32"], _view_result, differentiable=False, doc="a[i] of a multi-dimensional array: a view")
register("array_len", ["array(T)"], "int32", differentiable=False, doc="len(a): size of the first dimension")
register("array_shape", ["array(T)", "int32"], "int32", differentiable=False, doc="a.shape[k]")
