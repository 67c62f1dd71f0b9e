#!/usr/bin/env python3
"""Independent high-precision reference for the l1 staircase mechanisms of Kairouz's
thesis, section 2.3.  Writes mechanism/testdata/staircase_reference.json.

Run from the repository root:   python3 mechanism/testdata/gen_staircase_reference.py
Needs mpmath (tested with 1.3.0).  Arithmetic at mp.dps = 60.  Deterministic.

What is computed, from the definition (thesis eq. (2.8)), not from the closed forms the Go
code uses (the c_k / S_m sums of eq. (2.9)):

  The d-dimensional staircase density is a(gamma) * b^s on the l1 layers, b = e^-eps.
  With Delta = 1, the layer [k, k+gamma) has weight b^k and [k+gamma, k+1) weight
  b^(k+1); the l1 sphere of radius rho has surface proportional to rho^(d-1), so

     cost(gamma) = E||X||_1 = (d/(d+1)) * sum_k w_k (int rho^d) / sum_k w_k (int rho^(d-1))

  with the integrals taken per layer in closed form ((k+g)^(d+1) - k^(d+1) etc.) and the
  sums over k = 0, 1, ... done by mpmath.nsum (exact series acceleration, checked by
  comparing with a plain partial sum).

  gamma* minimises cost over [0, 1]: the minimum of cost on a grid of 2001 points
  spaced geometrically from 1e-300 to 1 (and linearly near 1) is refined by mpmath's
  findroot on the numerical derivative (mpmath.diff), and checked to be a minimum
  (cost(gamma* (1 +- 1e-6)) > cost(gamma*)) lower than cost(0) = cost(1).
  The script also records the local maximum below gamma* (the other root of the
  derivative) to support the Go code's search (it halves from 1 until the cost falls):
  ratio gamma*/gamma_max >= 3.7 at every eps here.

Privacy loss of the one-dimensional staircase (cases with "kind": "pld"): gamma is the
variance-optimal one, found by minimising E X^2 summed from the definition (as cost(),
with p = 2); P(L = +eps) is the integral of the density f over the x where
f(x) = e^eps f(x - 1) (a shift by one period Delta = 1, split into the intervals on which
both f(x) and f(x - 1) are constant, over enough periods that b^n < 1e-45); then the
K-fold composition's delta(eps') is summed over the trinomial of the three losses
(+eps, 0, -eps with P-masses p, 1 - p - p e^-eps, p e^-eps).  This is the continuous
staircase; dpkit runs it on a grid whose gamma is within 2^-31 of this one.

Cases: d = 2 at eps in EPS2 (gamma*, cost*, the cost of two independent 1-D staircases
at eps/2 each with their own l1-optimal gamma, and Laplace's 2/eps); d = 1 at a few eps
(gamma* against the closed form 1/(1+e^(eps/2)) of Geng-Viswanath, as a self-check).
"""

import json
import os
import sys

from mpmath import mp, mpf, exp, nsum, inf, diff, findroot, nstr, log

mp.dps = 60
HERE = os.path.dirname(os.path.abspath(__file__))
SIG = 30

EPS2 = ["0.000244140625", "0.001", "0.01", "0.1", "0.5", "1", "2", "3", "5", "10", "20",
        "40", "60"]
EPS1 = ["0.01", "1", "5"]


def cost(d, g, eps):
    b = exp(-eps)

    def layer(k, p):
        k = mpf(k)
        low = (k + g) ** p - k ** p
        high = (k + 1) ** p - (k + g) ** p
        return b ** k * (low + b * high)

    num = nsum(lambda k: layer(k, d + 1), [0, inf])
    den = nsum(lambda k: layer(k, d), [0, inf])
    # self-check of the series acceleration against a plain partial sum
    if eps >= 1:
        n = int(200 / eps) + 10
        pn = sum(layer(k, d + 1) for k in range(n))
        assert abs(pn / num - 1) < mpf(10) ** -40, (eps, pn, num)
    return mpf(d) / (d + 1) * num / den


def gamma_star(d, eps):
    grid = [mpf(10) ** (-300 + 300 * mpf(i) / 1000) for i in range(1001)]
    grid += [mpf(i) / 1000 for i in range(1, 1001)]
    grid = sorted(set(grid))
    vals = [cost(d, g, eps) for g in grid]
    i = min(range(len(grid)), key=lambda j: vals[j])
    g0 = grid[i]
    # refine on the derivative, in log(gamma) for small gamma
    f = lambda lg: diff(lambda x: cost(d, exp(x), eps), lg)
    lg = findroot(f, log(g0))
    g = exp(lg)
    c = cost(d, g, eps)
    assert c < cost(d, g * (1 + mpf(10) ** -6), eps) and c < cost(d, g * (1 - mpf(10) ** -6), eps)
    assert c < cost(d, mpf(0), eps) and abs(cost(d, mpf(0), eps) / cost(d, mpf(1), eps) - 1) < mpf(10) ** -40
    # the local maximum below gamma*: the largest grid point below g0 after which the
    # cost falls, refined the same way
    gmax = None
    for j in range(i - 1, 0, -1):
        if vals[j] >= vals[j - 1] and vals[j] >= vals[j + 1]:
            gmax = exp(findroot(f, log(grid[j])))
            break
    return g, c, gmax


def moment2(g, eps):
    b = exp(-eps)

    def layer(k):
        k = mpf(k)
        return b ** k * (((k + g) ** 3 - k ** 3) + b * ((k + 1) ** 3 - (k + g) ** 3))

    def mass(k):
        k = mpf(k)
        return b ** k * (g + b * (1 - g))

    return nsum(layer, [0, inf]) / 3 / nsum(mass, [0, inf])


def gamma_l2(eps):
    f = lambda g: diff(lambda x: moment2(x, eps), g)
    lo, hi = mpf(10) ** -30, mpf(1)
    for _ in range(200):  # bisection on the derivative's sign (single minimum in (0, 1))
        mid = (lo + hi) / 2
        if f(mid) < 0:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def p_plus(eps, g):
    """P(L = +eps) for the shift by one period: integral of f over {f(x) = e^eps f(x-1)}."""
    b = exp(-eps)
    a = (1 - b) / (2 * (b + (1 - b) * g))

    def f(x):
        r = abs(x)
        k = int(mp.floor(r))
        return a * b ** k * (1 if r - k < g else b)

    n = int(110 / eps) + 3
    pts = set()
    for k in range(-n, n + 2):
        for off in (0, g, -g):
            pts.add(mpf(k) + off)
            pts.add(mpf(k) + off + 1)
    pts = sorted(p for p in pts if -n <= p <= n + 1)
    total = mpf(0)
    for x0, x1 in zip(pts, pts[1:]):
        if x1 <= x0:
            continue
        mid = (x0 + x1) / 2
        fx, fy = f(mid), f(mid - 1)
        if abs(fx / fy - exp(eps)) < mpf(10) ** -40:
            total += (x1 - x0) * fx
    return total


def composed_delta(eps, p, k, target):
    q = p * exp(-eps)
    z = 1 - p - q
    out = mpf(0)
    for i in range(k + 1):
        for l in range(k + 1 - i):
            j = k - i - l
            loss = (i - l) * eps
            if loss > target:
                c = mp.factorial(k) / (mp.factorial(i) * mp.factorial(j) * mp.factorial(l))
                out += c * p ** i * z ** j * q ** l * (1 - exp(target - loss))
    return out


def main():
    cases = []
    for e in ["0.5", "1", "3"]:
        eps = mpf(float(e))
        g = gamma_l2(eps)
        p = p_plus(eps, g)
        for k in (1, 3, 10):
            for target in ("0", "1"):
                d = composed_delta(eps, p, k, mpf(float(target)))
                cases.append({"kind": "pld", "dims": 1, "eps": float(e), "gamma_l2": nstr(g, SIG), "p_plus": nstr(p, SIG),
                              "count": k, "target_eps": float(target), "delta": nstr(d, SIG)})
        print("pld eps=%s gamma_l2=%s p_plus=%s" % (e, nstr(g, 12), nstr(p, 12)), file=sys.stderr)
    for e in EPS2:
        eps = mpf(float(e))
        g, c, gmax = gamma_star(2, eps)
        g1 = 1 / (1 + exp(eps / 4))  # 1-D l1-optimal gamma at eps/2
        indep = 2 * cost(1, g1, eps / 2)
        ratio = g / gmax if gmax is not None else None
        assert ratio is None or ratio > mpf("3.7"), (e, ratio)
        cases.append({"dims": 2, "eps": float(e), "gamma_star": nstr(g, SIG), "cost_star": nstr(c, SIG),
                      "cost_independent": nstr(indep, SIG), "cost_laplace": nstr(2 / eps, SIG),
                      "gamma_ratio_to_local_max": nstr(ratio, 6) if ratio else None})
        print("d=2 eps=%s gamma*=%s cost*=%s" % (e, nstr(g, 12), nstr(c, 12)), file=sys.stderr)
    for e in EPS1:
        eps = mpf(float(e))
        g, c, _ = gamma_star(1, eps)
        assert abs(g / (1 / (1 + exp(eps / 2))) - 1) < mpf(10) ** -30, (e, g)
        cases.append({"dims": 1, "eps": float(e), "gamma_star": nstr(g, SIG), "cost_star": nstr(c, SIG)})
    out = {"generator": "mechanism/testdata/gen_staircase_reference.py", "precision_digits": 60,
           "cases": cases}
    with open(os.path.join(HERE, "staircase_reference.json"), "w") as fh:
        fh.write("{\"generator\": %s, \"precision_digits\": 60,\n \"cases\": [\n" % json.dumps(out["generator"]))
        fh.write(",\n".join("  " + json.dumps(c, sort_keys=True) for c in cases))
        fh.write("\n ]}\n")


if __name__ == "__main__":
    main()
