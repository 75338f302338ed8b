"""``kc.adjoint[x]`` for custom gradient functions (@kc.func_grad)."""


class _AdjointMap:
    def __getitem__(self, key):
        raise RuntimeError("kc.adjoint[...] is only valid inside a @kc.func_grad function")


adjoint = _AdjointMap()
