"""3x3 decompositions and matrices built from vectors (native/kc_linalg.h).

The decompositions return several values, unpacked in the kernel as in Warp:
``U, sigma, V = kc.svd3(A)``, ``Q, d = kc.eig3(A)``, ``Q, R = kc.qr3(A)``, ``R, S = kc.polar(A)``
(their rows have a tuple result; the native functions write the fields through references).
They exist for mat33 in float32 and float64.
"""
from .. import types as T
from .registry import register

_GAPS = ("Adjoints divide by gaps between {what}; each 1/g is regularised as g/(g^2 + e^2), "
         "e = sqrt(machine eps) * max|{sym}|: finite at repeated values, exact where the numerator vanishes "
         "identically with the gap (e.g. U V^T, sums of {sym}); a term whose numerator only vanishes like the "
         "gap (e.g. Q f(d) Q^T) is dropped within ~e of a tie.")


def _tuple(*pats):
    """Result rule: a tuple of mat33/vec3 of the argument's dtype."""
    def rule(args, b):
        dt = args[0]._dtype
        return T.Tuple(tuple(T.matrix((3, 3), dt) if p == "m" else T.vector(3, dt) for p in pats))
    rule.doc = "(" + ", ".join("mat33" if p == "m" else "vec3" for p in pats) + ")"
    return rule


for dt in ("float32", "float64"):
    M3 = f"mat(3,3,{dt})"
    register("svd3", [M3], _tuple("m", "v", "m"),
             doc="U, sigma, V = svd3(A): A = U diag(sigma) V^T, U and V rotations (det +1), |sigma| descending, "
                 "sigma[0] >= sigma[1] >= 0, sigma[2] has the sign of det A (Jacobi on A^T A, then Gram-Schmidt). "
                 + _GAPS.format(what="singular values (s_j - s_i and s_j + s_i)", sym="sigma"))
    register("eig3", [M3], _tuple("m", "v"),
             doc="Q, d = eig3(A): eigen decomposition of the symmetric (A + A^T)/2 = Q diag(d) Q^T, d ascending, "
                 "Q a rotation whose columns are the eigenvectors (cyclic Jacobi). The adjoint is symmetric. "
                 + _GAPS.format(what="eigenvalues", sym="d"))
    register("qr3", [M3], _tuple("m", "m"),
             doc="Q, R = qr3(A): A = Q R, Q a rotation (det +1), R upper triangular with R[0,0], R[1,1] >= 0 and "
                 "R[2,2] of the sign of det A (Gram-Schmidt). The adjoint needs full rank: 1/R[i,i] is regularised "
                 "as for svd3 (finite, not exact, at rank deficiency).")
    register("polar", [M3], _tuple("m", "m"),
             doc="R, S = polar(A): A = R S, R = U V^T the rotation closest to A (det +1), S = V diag(sigma) V^T "
                 "symmetric (one negative eigenvalue when det A < 0), from svd3. The adjoint is exact at repeated "
                 "singular values; only sigma_i + sigma_j = 0 is singular (regularised as for svd3).")

for n in (2, 3, 4):
    vecs = ["vec(N,S)"] * n
    register("matrix_from_rows", vecs, f"mat({n},N,S)", adj_ignores=tuple(range(n)),
             doc=f"{n} x N matrix whose row i is the i-th vector argument")
    register("matrix_from_cols", vecs, f"mat(N,{n},S)", adj_ignores=tuple(range(n)),
             doc=f"N x {n} matrix whose column j is the j-th vector argument")
