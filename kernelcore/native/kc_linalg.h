// 3x3 decompositions (symmetric eigen, signed SVD, QR, polar) and matrix_from_rows/cols,
// each beside its adjoint.
//
// The decompositions return several values: their table rows have a tuple result, and the
// generated code passes the tuple's fields as output references (emit_cpp.fwd_Call):
//     svd3(A, U, sigma, V)                          forward
//     adj_svd3(A, U, sigma, V, adj_A, adj_U, adj_sigma, adj_V)   adjoint (reads the forward's outputs)
//
// Adjoints of eigen/singular vectors divide by gaps between eigenvalues (sigma_j - sigma_i,
// sigma_j + sigma_i, d_j - d_i).  Those reciprocals go through safe_reciprocal: g / (g^2 + e^2)
// with e = sqrt(machine epsilon) * (largest magnitude): 1/g to relative 1e-16 (float64) or 1e-7
// (float32) once |g| > 1e4 e, and 0 at g = 0, so a repeated eigen/singular value gives a finite
// adjoint.  It is exact there when the numerator vanishes identically with the gap (R = U V^T,
// sums of sigma); a numerator that vanishes only like the gap (Q f(d) Q^T) loses its term within
// ~e of a tie.  polar() cancels its gap analytically and is exact at repeated singular values.
#pragma once
#include "kc_vec.h"

namespace kc {

template <typename T> struct la_limits;
template <> struct la_limits<float32> {
    KC_FUNC static float32 eps() { return 1.1920929e-7f; }
    KC_FUNC static float32 sqrt_eps() { return 3.4526698e-4f; }
    KC_FUNC static float32 tiny() { return 1.0e-30f; }
    KC_FUNC static int sweeps() { return 8; }
};
template <> struct la_limits<float64> {
    KC_FUNC static float64 eps() { return 2.220446049250313e-16; }
    KC_FUNC static float64 sqrt_eps() { return 1.4901161193847656e-8; }
    KC_FUNC static float64 tiny() { return 1.0e-300; }
    KC_FUNC static int sweeps() { return 12; }
};

template <typename T> KC_FUNC T la_abs(T x) { return x < T(0) ? -x : x; }
template <typename T> KC_FUNC T safe_reciprocal(T g, T scale) {
    T e = la_limits<T>::sqrt_eps() * scale;
    T den = g * g + e * e;
    return den > T(0) ? g / den : T(0);
}
template <typename T> KC_FUNC mat_t<3, 3, T> la_matmul(const mat_t<3, 3, T>& a, const mat_t<3, 3, T>& b) {
    mat_t<3, 3, T> r; KC_FOR(i, 3) KC_FOR(j, 3) r.c[i][j] = a.c[i][0] * b.c[0][j] + a.c[i][1] * b.c[1][j] + a.c[i][2] * b.c[2][j]; return r;
}
// a^T b
template <typename T> KC_FUNC mat_t<3, 3, T> la_matmul_tn(const mat_t<3, 3, T>& a, const mat_t<3, 3, T>& b) {
    mat_t<3, 3, T> r; KC_FOR(i, 3) KC_FOR(j, 3) r.c[i][j] = a.c[0][i] * b.c[0][j] + a.c[1][i] * b.c[1][j] + a.c[2][i] * b.c[2][j]; return r;
}
// a b^T
template <typename T> KC_FUNC mat_t<3, 3, T> la_matmul_nt(const mat_t<3, 3, T>& a, const mat_t<3, 3, T>& b) {
    mat_t<3, 3, T> r; KC_FOR(i, 3) KC_FOR(j, 3) r.c[i][j] = a.c[i][0] * b.c[j][0] + a.c[i][1] * b.c[j][1] + a.c[i][2] * b.c[j][2]; return r;
}
template <typename T> KC_FUNC vec_t<3, T> la_col(const mat_t<3, 3, T>& m, int j) { return vec_t<3, T>{{m.c[0][j], m.c[1][j], m.c[2][j]}}; }
template <typename T> KC_FUNC void la_set_col(mat_t<3, 3, T>& m, int j, const vec_t<3, T>& v) { KC_FOR(i, 3) m.c[i][j] = v.c[i]; }
template <typename T> KC_FUNC void la_swap_cols(mat_t<3, 3, T>& m, vec_t<3, T>& d, int a, int b) {
    T t = d.c[a]; d.c[a] = d.c[b]; d.c[b] = t;
    KC_FOR(i, 3) { T x = m.c[i][a]; m.c[i][a] = m.c[i][b]; m.c[i][b] = x; }
}
// a unit vector orthogonal to the unit vector u (used when a column degenerates)
template <typename T> KC_FUNC vec_t<3, T> la_any_orthogonal(const vec_t<3, T>& u) {
    vec_t<3, T> e = la_abs(u.c[0]) < T(0.57) ? vec_t<3, T>{{T(1), T(0), T(0)}} : vec_t<3, T>{{T(0), T(1), T(0)}};
    vec_t<3, T> w = cross(u, e);
    return div(w, sqrt(dot(w, w)));
}
template <typename T> KC_FUNC T la_max_abs(const vec_t<3, T>& d) {
    T m = la_abs(d.c[0]); if (la_abs(d.c[1]) > m) m = la_abs(d.c[1]); if (la_abs(d.c[2]) > m) m = la_abs(d.c[2]); return m;
}

// ---- symmetric eigen decomposition (cyclic Jacobi) ---------------------------------------------
// S symmetric -> Q (columns: eigenvectors, det +1) and d, ascending if ascending else descending.
template <typename T> KC_FUNC void la_sym_eig(mat_t<3, 3, T> S, mat_t<3, 3, T>& Q, vec_t<3, T>& d, bool ascending) {
    Q = identity_mat<3, T>();
    const int P[3] = {0, 0, 1}, R[3] = {1, 2, 2};
    for (int sweep = 0; sweep < la_limits<T>::sweeps(); ++sweep) {
        bool rotated = false;
        KC_FOR(k, 3) {
            int p = P[k], q = R[k], r = 3 - p - q;
            T apq = S.c[p][q];
            T app = S.c[p][p], aqq = S.c[q][q];
            // an off-diagonal entry below eps of its diagonal changes nothing representable
            if (la_abs(apq) <= la_limits<T>::eps() * T(0.01) * (la_abs(app) + la_abs(aqq)) || apq == T(0)) {
                S.c[p][q] = S.c[q][p] = T(0);
                continue;
            }
            rotated = true;
            // rotation angle phi zeroing S[p][q]: t = tan(phi), the smaller root of t^2 + 2 theta t - 1 = 0
            T theta = (aqq - app) / (T(2) * apq);
            T t = T(1) / (la_abs(theta) + sqrt(theta * theta + T(1)));
            if (theta < T(0)) t = -t;
            T c = T(1) / sqrt(t * t + T(1)), s = t * c;
            S.c[p][p] = app - t * apq;
            S.c[q][q] = aqq + t * apq;
            S.c[p][q] = S.c[q][p] = T(0);
            T arp = S.c[r][p], arq = S.c[r][q];
            S.c[r][p] = S.c[p][r] = c * arp - s * arq;
            S.c[r][q] = S.c[q][r] = s * arp + c * arq;
            KC_FOR(i, 3) {
                T vp = Q.c[i][p], vq = Q.c[i][q];
                Q.c[i][p] = c * vp - s * vq;
                Q.c[i][q] = s * vp + c * vq;
            }
        }
        if (!rotated) break;
    }
    d = vec_t<3, T>{{S.c[0][0], S.c[1][1], S.c[2][2]}};
    // sort (three compare-and-swaps), then make the basis right-handed
    const int SA[3] = {0, 1, 0}, SB[3] = {1, 2, 1};
    KC_FOR(k, 3) {
        int a = SA[k], b = SB[k];
        if (ascending ? d.c[b] < d.c[a] : d.c[b] > d.c[a]) la_swap_cols(Q, d, a, b);
    }
    if (determinant(Q) < T(0)) KC_FOR(i, 3) Q.c[i][2] = -Q.c[i][2];
}

// eig3(A) -> (Q, d): A (symmetrised as (A + A^T) / 2) = Q diag(d) Q^T, d ascending, det Q = +1.
template <typename T> KC_FUNC void eig3(const mat_t<3, 3, T>& A, mat_t<3, 3, T>& Q, vec_t<3, T>& d) {
    mat_t<3, 3, T> S; KC_FOR(i, 3) KC_FOR(j, 3) S.c[i][j] = T(0.5) * (A.c[i][j] + A.c[j][i]);
    la_sym_eig(S, Q, d, true);
}
template <typename T> KC_FUNC void adj_eig3(const mat_t<3, 3, T>& A, const mat_t<3, 3, T>& Q, const vec_t<3, T>& d,
                                            mat_t<3, 3, T>& adj_A, const mat_t<3, 3, T>& adj_Q, const vec_t<3, T>& adj_d) {
    // Q^T dS Q = dP: dd_i = dP_ii, (Q^T dQ)_ij = dP_ij / (d_j - d_i)  =>  adj_S = Q M Q^T with
    // M_ii = adj_d_i, M_ij = (J_ij - J_ji) / 2 / (d_j - d_i), J = Q^T adj_Q.
    mat_t<3, 3, T> J = la_matmul_tn(Q, adj_Q), M;
    T scale = la_max_abs(d);
    KC_FOR(i, 3) KC_FOR(j, 3) {
        if (i == j) M.c[i][j] = adj_d.c[i];
        else M.c[i][j] = T(0.5) * (J.c[i][j] - J.c[j][i]) * safe_reciprocal(d.c[j] - d.c[i], scale);
    }
    mat_t<3, 3, T> G = la_matmul_nt(la_matmul(Q, M), Q);
    KC_FOR(i, 3) KC_FOR(j, 3) adj_A.c[i][j] += T(0.5) * (G.c[i][j] + G.c[j][i]);
}

// swap singular triplets a and b, then negate column 2 of U and V so both stay rotations
template <typename T> KC_FUNC void la_svd_swap(mat_t<3, 3, T>& U, vec_t<3, T>& s, mat_t<3, 3, T>& V, int a, int b) {
    la_swap_cols(U, s, a, b);
    KC_FOR(i, 3) { T x = V.c[i][a]; V.c[i][a] = V.c[i][b]; V.c[i][b] = x; }
    KC_FOR(i, 3) { U.c[i][2] = -U.c[i][2]; V.c[i][2] = -V.c[i][2]; }   // U diag(s) V^T unchanged
}

// ---- signed SVD --------------------------------------------------------------------------------
// svd3(A) -> (U, sigma, V): A = U diag(sigma) V^T, U and V rotations (det +1), |sigma| descending,
// sigma_0 >= sigma_1 >= 0 and sigma_2 carrying the sign of det A.
// V: eigenvectors of A^T A; then A V = U diag(sigma) by Gram-Schmidt with u2 = u0 x u1.
template <typename T> KC_FUNC void svd3(const mat_t<3, 3, T>& A, mat_t<3, 3, T>& U, vec_t<3, T>& sigma, mat_t<3, 3, T>& V) {
    vec_t<3, T> lam;
    la_sym_eig(la_matmul_tn(A, A), V, lam, false);
    mat_t<3, 3, T> B = la_matmul(A, V);
    vec_t<3, T> b0 = la_col(B, 0), b1 = la_col(B, 1), b2 = la_col(B, 2);
    T scale = T(0); KC_FOR(i, 3) KC_FOR(j, 3) scale = la_abs(A.c[i][j]) > scale ? la_abs(A.c[i][j]) : scale;
    T floor_ = la_limits<T>::eps() * scale + la_limits<T>::tiny();
    vec_t<3, T> u0, u1;
    T s0 = sqrt(dot(b0, b0));
    if (s0 > floor_) u0 = div(b0, s0);
    else { u0 = vec_t<3, T>{{T(1), T(0), T(0)}}; s0 = T(0); }
    vec_t<3, T> w = sub(b1, mul(u0, dot(u0, b1)));
    T s1 = sqrt(dot(w, w));
    if (s1 > floor_) u1 = div(w, s1);
    else { u1 = la_any_orthogonal(u0); s1 = dot(u1, b1); }
    vec_t<3, T> u2 = cross(u0, u1);
    sigma = vec_t<3, T>{{s0, s1, dot(u2, b2)}};
    la_set_col(U, 0, u0); la_set_col(U, 1, u1); la_set_col(U, 2, u2);
    // sigma comes out of A V, sorted as A^T A's eigenvalues: at (near) ties rounding can leave it
    // out of order.  Reorder with paired column swaps, keeping det U = det V = +1 and A unchanged.
    if (sigma.c[1] > sigma.c[0]) la_svd_swap(U, sigma, V, 0, 1);
    if (la_abs(sigma.c[2]) > sigma.c[1]) {
        la_svd_swap(U, sigma, V, 1, 2);
        if (sigma.c[1] < T(0)) {   // move the sign back to sigma[2]: negate u1, u2, sigma[1], sigma[2]
            KC_FOR(i, 3) { U.c[i][1] = -U.c[i][1]; U.c[i][2] = -U.c[i][2]; }
            sigma.c[1] = -sigma.c[1]; sigma.c[2] = -sigma.c[2];
        }
        if (sigma.c[1] > sigma.c[0]) la_svd_swap(U, sigma, V, 0, 1);
    }
}

// The skew part of U^T dA V (i != j): M_ij = (a s_j + b s_i) / (s_j^2 - s_i^2) with
// a = (J - J^T)_ij, J = U^T adj_U, b = (K - K^T)_ij, K = V^T adj_V; written as
// (a + b) / 2 / (s_j - s_i) + (a - b) / 2 / (s_j + s_i) so that each gap is regularised alone.
template <typename T> KC_FUNC void la_svd_backprop(const mat_t<3, 3, T>& U, const vec_t<3, T>& s, const mat_t<3, 3, T>& V,
                                                    const mat_t<3, 3, T>& J, const mat_t<3, 3, T>& K, const vec_t<3, T>& adj_s,
                                                    mat_t<3, 3, T>& adj_A) {
    T scale = la_max_abs(s);
    mat_t<3, 3, T> M;
    KC_FOR(i, 3) KC_FOR(j, 3) {
        if (i == j) { M.c[i][j] = adj_s.c[i]; continue; }
        T a = J.c[i][j] - J.c[j][i], b = K.c[i][j] - K.c[j][i];
        M.c[i][j] = T(0.5) * (a + b) * safe_reciprocal(s.c[j] - s.c[i], scale)
                  + T(0.5) * (a - b) * safe_reciprocal(s.c[j] + s.c[i], scale);
    }
    adj_A += la_matmul_nt(la_matmul(U, M), V);
}
template <typename T> KC_FUNC void adj_svd3(const mat_t<3, 3, T>& A, const mat_t<3, 3, T>& U, const vec_t<3, T>& sigma, const mat_t<3, 3, T>& V,
                                            mat_t<3, 3, T>& adj_A, const mat_t<3, 3, T>& adj_U, const vec_t<3, T>& adj_sigma, const mat_t<3, 3, T>& adj_V) {
    la_svd_backprop(U, sigma, V, la_matmul_tn(U, adj_U), la_matmul_tn(V, adj_V), adj_sigma, adj_A);
}

// ---- polar decomposition -----------------------------------------------------------------------
// polar(A) -> (R, S): A = R S with R = U V^T the rotation closest to A and S = V diag(sigma) V^T
// symmetric (one negative eigenvalue when det A < 0: the reflection stays in S).
template <typename T> KC_FUNC void polar(const mat_t<3, 3, T>& A, mat_t<3, 3, T>& R, mat_t<3, 3, T>& S) {
    mat_t<3, 3, T> U, V; vec_t<3, T> s;
    svd3(A, U, s, V);
    R = la_matmul_nt(U, V);
    S = la_matmul_nt(la_matmul(V, diag(s)), V);
}
template <typename T> KC_FUNC void adj_polar(const mat_t<3, 3, T>& A, const mat_t<3, 3, T>& R, const mat_t<3, 3, T>& S,
                                             mat_t<3, 3, T>& adj_A, const mat_t<3, 3, T>& adj_R, const mat_t<3, 3, T>& adj_S) {
    // R = U V^T contributes a = X - X^T, b = -(X - X^T) with X = U^T adj_R V; S = V diag(s) V^T
    // contributes adj_s_i = H_ii and b = H_ij (s_j - s_i) with H = V^T (adj_S + adj_S^T) V.
    // The 1 / (s_j - s_i) term then is H_ij / 2 exactly: only s_i + s_j = 0 is singular.
    mat_t<3, 3, T> U, V; vec_t<3, T> s;
    svd3(A, U, s, V);
    mat_t<3, 3, T> X = la_matmul_tn(U, la_matmul(adj_R, V));
    mat_t<3, 3, T> G; KC_FOR(i, 3) KC_FOR(j, 3) G.c[i][j] = adj_S.c[i][j] + adj_S.c[j][i];
    mat_t<3, 3, T> H = la_matmul_tn(V, la_matmul(G, V));
    T scale = la_max_abs(s);
    mat_t<3, 3, T> M;
    KC_FOR(i, 3) KC_FOR(j, 3) {
        if (i == j) { M.c[i][j] = T(0.5) * H.c[i][i]; continue; }
        T xa = X.c[i][j] - X.c[j][i];
        M.c[i][j] = T(0.5) * H.c[i][j] + T(0.5) * (T(2) * xa - H.c[i][j] * (s.c[j] - s.c[i])) * safe_reciprocal(s.c[j] + s.c[i], scale);
    }
    adj_A += la_matmul_nt(la_matmul(U, M), V);
}

// ---- QR ----------------------------------------------------------------------------------------
// qr3(A) -> (Q, R): A = Q R, Q a rotation (det +1), R upper triangular with R_00, R_11 >= 0 and
// R_22 carrying the sign of det A (Gram-Schmidt on the columns, q2 = q0 x q1).
template <typename T> KC_FUNC void qr3(const mat_t<3, 3, T>& A, mat_t<3, 3, T>& Q, mat_t<3, 3, T>& R) {
    vec_t<3, T> a0 = la_col(A, 0), a1 = la_col(A, 1), a2 = la_col(A, 2);
    T scale = T(0); KC_FOR(i, 3) KC_FOR(j, 3) scale = la_abs(A.c[i][j]) > scale ? la_abs(A.c[i][j]) : scale;
    T floor_ = la_limits<T>::eps() * scale + la_limits<T>::tiny();
    R = mat_t<3, 3, T>{};
    vec_t<3, T> q0, q1;
    T r00 = sqrt(dot(a0, a0));
    if (r00 > floor_) q0 = div(a0, r00);
    else { q0 = vec_t<3, T>{{T(1), T(0), T(0)}}; r00 = dot(q0, a0); }
    T r01 = dot(q0, a1);
    vec_t<3, T> w = sub(a1, mul(q0, r01));
    T r11 = sqrt(dot(w, w));
    if (r11 > floor_) q1 = div(w, r11);
    else { q1 = la_any_orthogonal(q0); r11 = dot(q1, a1); }
    vec_t<3, T> q2 = cross(q0, q1);
    R.c[0][0] = r00; R.c[0][1] = r01; R.c[0][2] = dot(q0, a2);
    R.c[1][1] = r11; R.c[1][2] = dot(q1, a2);
    R.c[2][2] = dot(q2, a2);
    la_set_col(Q, 0, q0); la_set_col(Q, 1, q1); la_set_col(Q, 2, q2);
}
template <typename T> KC_FUNC void adj_qr3(const mat_t<3, 3, T>& A, const mat_t<3, 3, T>& Q, const mat_t<3, 3, T>& R,
                                           mat_t<3, 3, T>& adj_A, const mat_t<3, 3, T>& adj_Q, const mat_t<3, 3, T>& adj_R) {
    // adj_A = (adj_Q + Q copyltu(M)) R^-T with M = R adj_R^T - adj_Q^T Q and copyltu(M) the symmetric
    // matrix holding M's lower triangle; R^-T by substitution with regularised 1 / R_ii.
    mat_t<3, 3, T> M = sub(la_matmul_nt(R, adj_R), la_matmul_tn(adj_Q, Q)), C;
    KC_FOR(i, 3) KC_FOR(j, 3) C.c[i][j] = i >= j ? M.c[i][j] : M.c[j][i];
    mat_t<3, 3, T> B = add(adj_Q, la_matmul(Q, C));
    T scale = la_max_abs(vec_t<3, T>{{R.c[0][0], R.c[1][1], R.c[2][2]}});
    T inv[3]; KC_FOR(i, 3) inv[i] = safe_reciprocal(R.c[i][i], scale);
    // solve X R^T = B, i.e. R X^T = B^T: R upper triangular, back substitution per row of B
    KC_FOR(r, 3) {
        T x[3];
        for (int i = 2; i >= 0; --i) {
            T v = B.c[r][i];
            for (int k = i + 1; k < 3; ++k) v -= R.c[i][k] * x[k];
            x[i] = v * inv[i];
        }
        KC_FOR(i, 3) adj_A.c[r][i] += x[i];
    }
}

// ---- matrices from row / column vectors ---------------------------------------------------------
template <int N, typename T> KC_FUNC mat_t<2, N, T> matrix_from_rows(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    mat_t<2, N, T> m; KC_FOR(j, N) { m.c[0][j] = a.c[j]; m.c[1][j] = b.c[j]; } return m;
}
template <int N, typename T> KC_FUNC mat_t<3, N, T> matrix_from_rows(const vec_t<N, T>& a, const vec_t<N, T>& b, const vec_t<N, T>& c) {
    mat_t<3, N, T> m; KC_FOR(j, N) { m.c[0][j] = a.c[j]; m.c[1][j] = b.c[j]; m.c[2][j] = c.c[j]; } return m;
}
template <int N, typename T> KC_FUNC mat_t<4, N, T> matrix_from_rows(const vec_t<N, T>& a, const vec_t<N, T>& b, const vec_t<N, T>& c, const vec_t<N, T>& d) {
    mat_t<4, N, T> m; KC_FOR(j, N) { m.c[0][j] = a.c[j]; m.c[1][j] = b.c[j]; m.c[2][j] = c.c[j]; m.c[3][j] = d.c[j]; } return m;
}
template <int N, typename T> KC_FUNC void adj_matrix_from_rows(const vec_t<N, T>&, const vec_t<N, T>&, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                                                                const mat_t<2, N, T>& g) {
    KC_FOR(j, N) { adj_a.c[j] += g.c[0][j]; adj_b.c[j] += g.c[1][j]; }
}
template <int N, typename T> KC_FUNC void adj_matrix_from_rows(const vec_t<N, T>&, const vec_t<N, T>&, const vec_t<N, T>&, vec_t<N, T>& adj_a,
                                                                vec_t<N, T>& adj_b, vec_t<N, T>& adj_c, const mat_t<3, N, T>& g) {
    KC_FOR(j, N) { adj_a.c[j] += g.c[0][j]; adj_b.c[j] += g.c[1][j]; adj_c.c[j] += g.c[2][j]; }
}
template <int N, typename T> KC_FUNC void adj_matrix_from_rows(const vec_t<N, T>&, const vec_t<N, T>&, const vec_t<N, T>&, const vec_t<N, T>&,
                                                                vec_t<N, T>& adj_a, vec_t<N, T>& adj_b, vec_t<N, T>& adj_c, vec_t<N, T>& adj_d,
                                                                const mat_t<4, N, T>& g) {
    KC_FOR(j, N) { adj_a.c[j] += g.c[0][j]; adj_b.c[j] += g.c[1][j]; adj_c.c[j] += g.c[2][j]; adj_d.c[j] += g.c[3][j]; }
}
template <int N, typename T> KC_FUNC mat_t<N, 2, T> matrix_from_cols(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    return transpose(matrix_from_rows(a, b));
}
template <int N, typename T> KC_FUNC mat_t<N, 3, T> matrix_from_cols(const vec_t<N, T>& a, const vec_t<N, T>& b, const vec_t<N, T>& c) {
    return transpose(matrix_from_rows(a, b, c));
}
template <int N, typename T> KC_FUNC mat_t<N, 4, T> matrix_from_cols(const vec_t<N, T>& a, const vec_t<N, T>& b, const vec_t<N, T>& c, const vec_t<N, T>& d) {
    return transpose(matrix_from_rows(a, b, c, d));
}
template <int N, typename T> KC_FUNC void adj_matrix_from_cols(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                                                                const mat_t<N, 2, T>& g) {
    adj_matrix_from_rows(a, b, adj_a, adj_b, transpose(g));
}
template <int N, typename T> KC_FUNC void adj_matrix_from_cols(const vec_t<N, T>& a, const vec_t<N, T>& b, const vec_t<N, T>& c, vec_t<N, T>& adj_a,
                                                                vec_t<N, T>& adj_b, vec_t<N, T>& adj_c, const mat_t<N, 3, T>& g) {
    adj_matrix_from_rows(a, b, c, adj_a, adj_b, adj_c, transpose(g));
}
template <int N, typename T> KC_FUNC void adj_matrix_from_cols(const vec_t<N, T>& a, const vec_t<N, T>& b, const vec_t<N, T>& c, const vec_t<N, T>& d,
                                                                vec_t<N, T>& adj_a, vec_t<N, T>& adj_b, vec_t<N, T>& adj_c, vec_t<N, T>& adj_d,
                                                                const mat_t<N, 4, T>& g) {
    adj_matrix_from_rows(a, b, c, d, adj_a, adj_b, adj_c, adj_d, transpose(g));
}

}  // namespace kc
