#!/usr/bin/env python3
"""Independent reference for tiny delta (issue 24 item 3): delta(eps) of k Poisson-
subsampled Gaussian releases far in the tail, where the lattice's absolute error used to
leave the lower end at 0.  Writes pld/testdata/tiny_delta.json.

Run from the repository root:   python3 pld/testdata/gen_tiny_delta.py
Needs mpmath (tested with 1.3.0).  mp.dps = 40.  Deterministic, a few minutes.

Method (shares nothing with package pld: no lattice, no FFT).  One release of the
Gaussian of noise sigma on a Poisson sample of rate q is the pair P = (1-q) N(0, s^2) +
q N(1, s^2), Q = N(0, s^2) (remove) or (Q, P) (add); its privacy loss L = ln(P/Q)(x).
Its moment generating function under P, M(lam) = E_P[e^(lam L)] = int P^(1+lam) Q^(-lam),
and the moments of L under the tilted law e^(lam L) dP / M are integrals computed by
mpmath.quad at 40 digits.  For the k-fold sum S, with lam the saddle point
(k E_lam[L] = eps),

    delta(eps) = E_P[(1 - e^(eps-S))_+] = e^(k ln M(lam) - lam eps) E_lam[e^(-lam T) (1 - e^(-T)) 1{T > 0}],

T = S - eps, exactly (exponential tilting).  Under the tilted law T has mean 0 and
variance V = k kappa2; its density is replaced by the Edgeworth series to order 1/k
(kappa3, kappa4 and kappa3^2 terms); the first terms left out are of order k^(-3/2),
cubes of the first-order term (written out as first_order_term: 4.5e-3 for k = 1000), so
the values are accurate to about 1e-5 relative at worst.  The remaining integral over T is done by quad.  The tolerance a test
may use against these values is therefore 1e-4 relative, far inside which a wrong
bracket (0, or 10 orders too wide) would not fall.
"""

import json
import os

from mpmath import mp, mpf, exp, log, log1p, sqrt, pi, quad, inf, findroot, nstr

mp.dps = 40
HERE = os.path.dirname(os.path.abspath(__file__))


def pair(sigma, q, direction):
    s2 = mpf(sigma) ** 2

    def lq(x):  # ln Q(x), Q = N(0, s^2)
        return -x * x / (2 * s2) - log(sqrt(2 * pi * s2))

    def lp(x):  # ln P(x), P = (1-q) N(0, s^2) + q N(1, s^2)
        return lq(x) + log1p(q * (exp((2 * x - 1) / (2 * s2)) - 1))

    if direction == "remove":
        return lp, lq
    return lq, lp


def tilted_moments(lfirst, lsecond, lam, pts):
    """M(lam) and the tilted moments E_lam[L^j], j = 1..4, of L = ln(first/second)
    under first."""
    def integrand(j):
        def f(x):
            a, b = lfirst(x), lsecond(x)
            L = a - b
            return L ** j * exp(a + lam * L)
        return f
    M = quad(integrand(0), pts)
    return M, [quad(integrand(j), pts) / M for j in (1, 2, 3, 4)]


def delta(sigma, q, k, eps, direction):
    lf, ls = pair(sigma, q, direction)
    eps = mpf(eps)
    # break points: the integrands are smooth bumps around x ~ lam-dependent centres
    pts = [-inf] + [mpf(x) for x in range(-60, 301, 5)] + [inf]

    def mean_gap(lam):
        def f(j):
            def g(x):
                a, b = lf(x), ls(x)
                return (a - b) ** j * exp(a + lam * (a - b))
            return g
        return k * quad(f(1), pts) / quad(f(0), pts) - eps

    lo, hi = mpf(0), mpf(1)
    while mean_gap(hi) < 0:
        lo, hi = hi, 2 * hi
    # The tilting identity holds for every lam, and the density below is centred on the
    # tilted mean of T wherever lam lands: lam to 1e-12 of hi is plenty.
    for _ in range(40):
        mid = (lo + hi) / 2
        if mean_gap(mid) < 0:
            lo = mid
        else:
            hi = mid
    lam = (lo + hi) / 2
    M, (m1, m2, m3, m4) = tilted_moments(lf, ls, lam, pts)
    k2 = m2 - m1 ** 2
    k3 = m3 - 3 * m2 * m1 + 2 * m1 ** 3
    k4 = m4 - 4 * m3 * m1 - 3 * m2 ** 2 + 12 * m2 * m1 ** 2 - 6 * m1 ** 4
    V, K3, K4 = k * k2, k * k3, k * k4
    sd = sqrt(V)
    mean = k * m1 - eps  # ~0 (the saddle point): kept in the density's centre

    def dens(t):
        z = (t - mean) / sd
        he3 = z ** 3 - 3 * z
        he4 = z ** 4 - 6 * z ** 2 + 3
        he6 = z ** 6 - 15 * z ** 4 + 45 * z ** 2 - 15
        corr = 1 + K3 / (6 * sd ** 3) * he3 + K4 / (24 * V ** 2) * he4 + K3 ** 2 / (72 * V ** 3) * he6
        return exp(-z * z / 2) / (sd * sqrt(2 * pi)) * corr

    scale = 1 / lam
    body = quad(lambda t: exp(-lam * t) * -mp.expm1(-t) * dens(t), [0, scale, 5 * scale, 20 * scale, 60 * scale, 200 * scale])
    return exp(k * log(M) - lam * eps) * body, lam, K3 / (6 * sd ** 3)


def main():
    cases = []
    for sigma, q, k, eps in [(4, 0.01, 1000, 1.0)]:
        rem, lam_r, skew_r = delta(sigma, q, k, eps, "remove")
        add, lam_a, skew_a = delta(sigma, q, k, eps, "add")
        cases.append({
            "name": "subsampled_gaussian_s%g_q%g_k%d_eps%g" % (sigma, q, k, eps),
            "mechanism": {"kind": "subsampled_gaussian", "sigma": sigma, "sensitivity": 1, "rate": q, "count": k},
            "eps": eps,
            "delta_remove": nstr(rem, 25), "delta_add": nstr(add, 25),
            "want": nstr(max(rem, add), 25),
            "saddle_lambda": nstr(lam_r, 12), "first_order_term": nstr(skew_r, 6),
        })
    with open(os.path.join(HERE, "tiny_delta.json"), "w") as f:
        json.dump({"generator": "pld/testdata/gen_tiny_delta.py", "precision_digits": 40,
                   "relative_accuracy": "1e-5 (Edgeworth series to order 1/k at the saddle point)", "cases": cases}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
