#!/usr/bin/env python3
"""Independent high-precision reference for the Johnson-Lindenstrauss variance mechanism
(mechanism.JLVariance).  Writes mechanism/testdata/jl_reference.json.

Run from the repository root:   python3 mechanism/testdata/gen_jl_reference.py
Needs mpmath (tested with 1.3.0).  Arithmetic at mp.dps = 40.  Deterministic; about a
minute.

What is computed, by mpmath quadrature of the definitions (not by the Go code's upper
Riemann sums):

  row_delta: the per-row curve of JLVariance's doc comment,
        delta_row(eps0; w) = 2 * int_0^inf phi(g) * dG(eps0; g/w) dg,
        dG(eps; mu) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2),
     integrated on a partition of [0, sqrt(eps0 w) + 14] in steps of 1/2 plus the tail,
     and checked against a second partition (steps of 1/3) to 1e-25 relative.

  weight: the smallest w with delta_row(eps0; w) <= delta0, found by the secant method
     on log delta_row - log delta0 in log w, and checked to bracket the target at
     w (1 -+ 1e-12).  The eps0 inputs are the per-row epsilons dpkit's exact
     composition gives (printed by the Go code; inputs, not outputs, of this script).

  pairs: the exact curve delta(eps) = P(L > eps) - e^eps Q(L > eps) of one row for a
     concrete pair of neighbouring matrices, whitened: P = N(0, I + a a^T), Q =
     N(0, I + b b^T) in two dimensions with a = (t/w, 0) and b = a + (0, 1/w)
     ("orthogonal") or b = ((t + 1)/w, 0) ("parallel"), both directions.  With lambda_i
     the eigenvalues of Sigma_Q^-1 Sigma_P the loss is
        L = sum_i ((lambda_i - 1) z_i^2 - ln lambda_i)/2,  z ~ N(0, I) under P and
        z_i ~ N(0, 1/lambda_i) under Q,
     so each probability is a one-dimensional integral over z_2 of a chi-square(1)
     tail in z_1.  These show the per-row bound is sound (every pair below it) and
     tight (the orthogonal pair tends to it as t grows).
"""

import json
import os

from mpmath import mp, mpf, quad, ncdf, exp, log, sqrt, pi, inf, erfc, erf, matrix, eig, nstr, re

mp.dps = 40
HERE = os.path.dirname(os.path.abspath(__file__))


def dG(eps, mu):
    return ncdf(-eps / mu + mu / 2) - exp(eps) * ncdf(-eps / mu - mu / 2)


def row_delta(eps0, w, step=mpf(1) / 2):
    eps0, w = mpf(eps0), mpf(w)

    def f(g):
        if g <= 0:
            return mpf(0)
        return 2 * exp(-g * g / 2) / sqrt(2 * pi) * dG(eps0, g / w)

    top = sqrt(eps0 * w) + 14
    pts = [mpf(0)]
    while pts[-1] < top:
        pts.append(pts[-1] + step)
    pts.append(inf)
    return quad(f, pts)


def checked_row_delta(eps0, w):
    a = row_delta(eps0, w)
    b = row_delta(eps0, w, mpf(1) / 3)
    assert abs(a - b) <= mpf("1e-25") * abs(a) + mpf("1e-300"), (eps0, w, a, b)
    return a


def weight(eps0, delta0):
    eps0, delta0 = mpf(eps0), mpf(delta0)
    g = lambda lw: log(row_delta(eps0, exp(lw))) - log(delta0)
    x0 = log(log(1 / delta0) / eps0)
    x1 = x0 - mpf("0.5")
    f0, f1 = g(x0), g(x1)
    for _ in range(60):
        x2 = x1 - f1 * (x1 - x0) / (f1 - f0)
        x0, f0, x1, f1 = x1, f1, x2, g(x2)
        if abs(x1 - x0) < mpf("1e-30"):
            break
    w = exp(x1)
    assert row_delta(eps0, w * (1 - mpf("1e-12"))) > delta0 > row_delta(eps0, w * (1 + mpf("1e-12"))), (eps0, delta0)
    return w


def tail(c, x):
    """P(c Z^2 > x) for Z ~ N(0, 1)."""
    if c > 0:
        return mpf(1) if x <= 0 else erfc(sqrt(x / c) / sqrt(2))
    if c < 0:
        return mpf(0) if x >= 0 else erf(sqrt(x / c) / sqrt(2))
    return mpf(1) if x < 0 else mpf(0)


def pair_delta(eps, a, b):
    eps = mpf(eps)
    sp = matrix([[1 + a[0] ** 2, a[0] * a[1]], [a[0] * a[1], 1 + a[1] ** 2]])
    sq = matrix([[1 + b[0] ** 2, b[0] * b[1]], [b[0] * b[1], 1 + b[1] ** 2]])
    lam, _ = eig(sq ** -1 * sp)
    lam = [re(l) for l in lam]
    c = [(l - 1) / 2 for l in lam]
    k = -sum(log(l) for l in lam) / 2

    def prob(c1, c2):
        f = lambda z: exp(-z * z / 2) / sqrt(2 * pi) * tail(c1, eps - k - c2 * z * z)
        pts = [-inf, 0, inf]
        if c2 != 0 and (eps - k) / c2 > 0:
            r = sqrt((eps - k) / c2)
            pts = [-inf, -r, 0, r, inf]
        return quad(f, pts)

    return prob(c[0], c[1]) - exp(eps) * prob(c[0] / lam[0], c[1] / lam[1])


def main():
    out = {"row_delta": [], "weight": [], "pairs": []}
    for eps0, w in [("1", "2"), ("1", "7.8646"), ("8", "0.7"), ("0.1", "100"), ("0.01", "2000"),
                    ("0.0042183190895799530", "2909.25"), ("0.5", "60"), ("2", "1")]:
        out["row_delta"].append({"eps0": eps0, "w": w, "delta": nstr(checked_row_delta(mpf(eps0), mpf(w)), 30)})
    # (eps0, delta0): the first is NewJLVariance(eps=1, delta=1e-6, eta=0.1, nu=0.05)'s rows
    # (r = 2952, delta0 = 1e-6/5904), eps0 as dpkit's exact composition gives it.
    for eps0, delta0 in [("0.004218319089579953", str(mpf("1e-6") / 5904)), ("1", "1e-5"), ("8", "0.01"),
                         ("0.05", "1e-12"), ("0.3", "1e-100"), ("30", "1e-3")]:
        out["weight"].append({"eps0": eps0, "delta0": nstr(mpf(delta0), 20), "w": nstr(weight(eps0, mpf(delta0)), 30)})
    eps, w = mpf(1), mpf(2)
    bound = checked_row_delta(eps, w)
    for t in ["0", "0.5", "1", "3", "10", "100", "1000"]:
        tt = mpf(t)
        a = (tt / w, mpf(0))
        for kind, b in [("orthogonal", (tt / w, 1 / w)), ("parallel", ((tt + 1) / w, mpf(0)))]:
            for direction, (p, q) in [("forward", (a, b)), ("backward", (b, a))]:
                d = pair_delta(eps, p, q)
                assert d <= bound * (1 + mpf("1e-20")), (t, kind, direction, d, bound)
                out["pairs"].append({"eps": "1", "w": "2", "t": t, "kind": kind, "direction": direction,
                                     "delta": nstr(d, 30)})
    out["pairs_bound"] = nstr(bound, 30)
    with open(os.path.join(HERE, "jl_reference.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
