#!/usr/bin/env python3
"""Independent high-precision reference values for package pld (mechanism-aware
composition).  Writes pld/testdata/reference.json.

Run from the repository root:   python3 pld/testdata/gen_reference.py
Needs mpmath (tested with 1.3.0).  All arithmetic at mp.dps = 50.  Deterministic.
Shares no code with the Go implementation: every curve is a closed form, a finite
enumeration or a closed-form integral, written out below.  See pld/testdata/README.md.

The privacy curve of a dominating pair (P, Q) is the hockey-stick divergence
    delta(e) = sup_S P(S) - e^e Q(S) = E_P[(1 - e^(e - L))_+],  L = ln(P/Q),
and of a composition it is that of the product pair (losses add).  A mechanism whose
add and remove neighbours give different pairs (Poisson subsampling) reports the larger
of the two directions' curves, as dpkit does.
"""

import json
import os
import sys

from mpmath import mp, mpf, exp, expm1, log, log1p, ncdf, sqrt, binomial, inf

mp.dps = 50
HERE = os.path.dirname(os.path.abspath(__file__))
SIG = 25


def F(x):
    """Exact conversion of a Python float (the float64 Go passes in) to mpf."""
    assert isinstance(x, float), x
    return mpf(x)


def fmt(v):
    return mp.nstr(v, SIG, min_fixed=-5, max_fixed=5) if v != 0 else "0"


# ---------------------------------------------------------------------------------
# Curves
# ---------------------------------------------------------------------------------

def gauss_hockey(mu, y):
    """E[(1 - e^(y - G))_+] for G ~ N(mu^2/2, mu^2) (mu-Gaussian DP at any real y;
    Balle & Wang 2018 Thm 8), and the point mass at 0 when mu = 0."""
    if mu == 0:
        return -expm1(y) if y < 0 else mpf(0)
    return ncdf(-y / mu + mu / 2) - exp(y) * ncdf(-y / mu - mu / 2)


class Atoms:
    """A loss distribution under P: finitely many atoms (loss -> P-mass) plus mass at
    +inf (the delta-events), optionally convolved with a Gaussian loss of parameter mu."""

    def __init__(self, atoms, inf_mass=mpf(0), mu=mpf(0)):
        self.atoms = atoms          # dict loss -> mass (mpf keys are exact sums)
        self.inf = inf_mass
        self.mu = mu

    def compose(self, other):
        out = {}
        for l1, m1 in self.atoms.items():
            for l2, m2 in other.atoms.items():
                out[l1 + l2] = out.get(l1 + l2, mpf(0)) + m1 * m2
        fin1 = sum(self.atoms.values(), mpf(0))
        fin2 = sum(other.atoms.values(), mpf(0))
        inf_mass = self.inf * (other.inf + fin2) + fin1 * other.inf
        return Atoms(out, inf_mass, sqrt(self.mu ** 2 + other.mu ** 2))

    def power(self, k):
        acc = None
        base = self
        while k:
            if k & 1:
                acc = base if acc is None else acc.compose(base)
            k >>= 1
            if k:
                base = base.compose(base)
        return acc

    def delta(self, e):
        s = self.inf
        for l, m in self.atoms.items():
            if self.mu == 0 and l <= e:
                continue
            s += m * gauss_hockey(self.mu, e - l)
        return s


def binomial_atoms(k, lhi, llo, phi, plo):
    """k-fold composition of a two-atom loss (lhi with mass phi, llo with plo):
    Binomial sums over m = 0..k (k <= 20000), every atom kept (targets go down to
    delta = 1e-300, where the heaviest atoms can be far in a tail)."""
    assert k <= 20000
    out = {}
    for m in range(k + 1):
        w = binomial(k, m) * phi ** m * plo ** (k - m)
        l = m * lhi + (k - m) * llo
        out[l] = out.get(l, mpf(0)) + w
    return out


# --- mechanisms, as per-direction atom distributions ------------------------------

def rr_atoms(e, K):
    """K-ary randomized response: the truth with prob e^e/(e^e + K - 1)."""
    z = exp(e) + K - 1
    hi, lo = exp(e) / z, 1 / z
    atoms = {e: hi, -e: lo}
    if K > 2:
        atoms[mpf(0)] = (K - 2) / z
    return atoms


def eps_delta_atoms(e, d):
    """Canonical (e, d) pair, KOV eq. (17)/(18): +-e with (1-d)e^e/(1+e^e), (1-d)/(1+e^e),
    and d at +inf."""
    if e == 0:
        return {mpf(0): 1 - d}, d
    return {e: (1 - d) / (1 + exp(-e)), -e: (1 - d) / (1 + exp(e))}, d


def subsampled_two_atoms(e, q, add):
    """Poisson subsampling (rate q) of a pair with losses +-e and P-masses
    p = e^e/(1+e^e), 1-p (binary RR, or an (e, 0) pair): the remove pair
    (qP + (1-q)Q, Q) and the add pair (Q, qP + (1-q)Q) (Zhu, Dong & Wang 2022, Thm 11)."""
    p, pc = 1 / (1 + exp(-e)), 1 / (1 + exp(e))   # pc = 1 - p without cancellation
    P = [p, pc]              # outcomes 1, 2: loss +e, -e
    Q = [pc, p]
    mix = [q * P[i] + (1 - q) * Q[i] for i in range(2)]
    a, b = (Q, mix) if add else (mix, Q)
    return {log(a[i] / b[i]): a[i] for i in range(2)}


def dist_of(mechs, direction):
    """The loss distribution of a workload in one direction ('remove' or 'add')."""
    acc = Atoms({mpf(0): mpf(1)})
    for m in mechs:
        kind, count = m["kind"], m.get("count", 1)
        if kind == "gaussian":
            mu = F(m["sensitivity"]) / F(m["sigma"])
            d = Atoms({mpf(0): mpf(1)}, mu=mu * sqrt(count))
            count = 1
        elif kind == "rr":
            d = Atoms(rr_atoms(F(m["epsilon"]), m["categories"]))
            if m["categories"] == 2 and count > 1:
                a = rr_atoms(F(m["epsilon"]), 2)
                e = F(m["epsilon"])
                d = Atoms(binomial_atoms(count, e, -e, a[e], a[-e]))
                count = 1
        elif kind == "eps_delta":
            atoms, dd = eps_delta_atoms(F(m["epsilon"]), F(m["delta"]))
            d = Atoms(atoms, dd)
            if count > 1 and len(atoms) == 2:
                e = F(m["epsilon"])
                keep = (1 - F(m["delta"])) ** count
                b = binomial_atoms(count, e, -e, atoms[e] / (1 - F(m["delta"])), atoms[-e] / (1 - F(m["delta"])))
                d = Atoms({l: w * keep for l, w in b.items()}, 1 - keep)
                count = 1
        elif kind == "subsampled_rr":
            e, q = F(m["epsilon"]), F(m["rate"])
            a = subsampled_two_atoms(e, q, direction == "add")
            (l1, p1), (l2, p2) = sorted(a.items())
            d = Atoms(binomial_atoms(count, l2, l1, p2, p1))
            count = 1
        else:
            raise ValueError(kind)
        if count > 1:
            d = d.power(count)
        acc = acc.compose(d)
    return acc


def workload_delta(mechs, e):
    directions = ["remove", "add"] if any(m["kind"].startswith("subsampled") for m in mechs) else ["remove"]
    return max(dist_of(mechs, d).delta(e) for d in directions)


# --- single releases with a density: closed forms --------------------------------

def subsampled_gaussian_delta(sigma, sens, q, e):
    """One release of N(0, sigma^2) on a query of sensitivity sens, Poisson subsampled at
    rate q.  With f0 = N(0, s^2), f1 = N(sens, s^2) the remove pair is
    (q f1 + (1-q) f0, f0) and the add pair (f0, q f1 + (1-q) f0).  The likelihood ratio
    f1/f0 = exp((2x sens - sens^2)/(2 s^2)) increases with x, so each hockey-stick
    integral is over a half-line, and is a difference of normal tails."""
    s = sigma
    ee = exp(e)
    # remove: q f1 + (1-q) f0 > e^e f0  <=>  f1/f0 > (e^e - 1 + q)/q  <=>  x > x1
    r = (ee - 1 + q) / q
    x1 = s ** 2 * log(r) / sens + sens / 2
    rem = q * ncdf(-(x1 - sens) / s) + (1 - q - ee) * ncdf(-x1 / s)
    # add: f0 > e^e (q f1 + (1-q) f0)  <=>  f1/f0 < (1 - e^e (1-q))/(e^e q)  <=>  x < x2
    num = 1 - ee * (1 - q)
    if num <= 0:
        add = mpf(0)
    else:
        x2 = s ** 2 * log(num / (ee * q)) / sens + sens / 2
        add = ncdf(x2 / s) - ee * (q * ncdf((x2 - sens) / s) + (1 - q) * ncdf(x2 / s))
    return max(rem, add, mpf(0))


def laplace_cdf(x, m, b):
    return exp((x - m) / b) / 2 if x < m else 1 - exp(-(x - m) / b) / 2


def two_laplace_hockey(A, B, C, D, b, sens, e):
    """The integral over x of (A f0 + B f1 - e^e (C f0 + D f1))_+ for f0 = Lap(0, b),
    f1 = Lap(sens, b).  r(x) = f0/f1 is e^(sens/b) for x <= 0, e^((sens - 2x)/b) on
    [0, sens], e^(-sens/b) beyond: non-increasing, so the integrand, f1·(a r + c) with
    a = A - e^e C, c = B - e^e D, is positive on a half-line bounded by x*, where
    r(x*) = -c/a."""
    ee = exp(e)
    a, c = A - ee * C, B - ee * D

    def cdf(x, m):
        if x == -inf:
            return mpf(0)
        if x == inf:
            return mpf(1)
        return laplace_cdf(x, m, b)

    def mass(lo, hi):  # integral of the (signed) integrand over (lo, hi)
        return a * (cdf(hi, 0) - cdf(lo, 0)) + c * (cdf(hi, sens) - cdf(lo, sens))

    # sign of a r + c at r = r(x): find x* in closed form
    rmax, rmin = exp(sens / b), exp(-sens / b)
    if a == 0:
        return max(mass(-inf, inf), mpf(0)) if c > 0 else mpf(0)
    rstar = -c / a
    if rstar <= rmin:
        xstar = inf
    elif rstar >= rmax:
        xstar = -inf
    else:
        xstar = (sens - b * log(rstar)) / 2
    if a > 0:   # positive where r > r*, i.e. x < x*
        return max(mass(-inf, xstar), mpf(0)) if xstar != -inf else mpf(0)
    return max(mass(xstar, inf), mpf(0)) if xstar != inf else mpf(0)


def subsampled_laplace_delta(scale, sens, q, e):
    """One release of Lap(scale) noise, Poisson subsampled at rate q, pld's pair:
    P = Lap(0, b), Q = Lap(sens, b); remove (qP + (1-q)Q, Q), add (Q, qP + (1-q)Q)."""
    rem = two_laplace_hockey(q, 1 - q, mpf(0), mpf(1), scale, sens, e)
    add = two_laplace_hockey(mpf(0), mpf(1), q, 1 - q, scale, sens, e)
    return max(rem, add)


def laplace_delta(scale, sens, e):
    """One Laplace release: delta(e) = 1 - e^((e - e0)/2) for e <= e0 = sens/scale."""
    e0 = sens / scale
    return -expm1((e - e0) / 2) if e < e0 else mpf(0)


def case_delta(c, e):
    k = c["kind"]
    if k == "workload":
        return workload_delta(c["mechs"], e)
    if k == "subsampled_gaussian":
        return subsampled_gaussian_delta(F(c["sigma"]), F(c["sensitivity"]), F(c["rate"]), e)
    if k == "subsampled_laplace":
        return subsampled_laplace_delta(F(c["scale"]), F(c["sensitivity"]), F(c["rate"]), e)
    if k == "laplace":
        return laplace_delta(F(c["scale"]), F(c["sensitivity"]), e)
    raise ValueError(k)


def eps_at(c, target):
    """Smallest e >= 0 with delta(e) <= target, by bisection to 1e-40 relative (delta is
    continuous and non-increasing)."""
    if case_delta(c, mpf(0)) <= target:
        return mpf(0)
    lo, hi = mpf(0), mpf(1)
    while case_delta(c, hi) > target:
        lo, hi = hi, hi * 2
        assert hi < mpf(10) ** 20, c["name"]
    while hi - lo > mpf(10) ** -40 * hi:
        mid = (lo + hi) / 2
        if case_delta(c, mid) > target:
            lo = mid
        else:
            hi = mid
    return hi


# ---------------------------------------------------------------------------------
# Self-tests
# ---------------------------------------------------------------------------------

def self_tests():
    # Gaussian hockey at mu: matches a direct integral of the two densities.
    from mpmath import quad, npdf
    mu, e = mpf(1.3), mpf(0.7)
    direct = quad(lambda x: max(npdf(x, 0, 1) - exp(e) * npdf(x, mu, 1), 0), [-inf, (mu / 2 - e / mu), inf])
    assert abs(direct - gauss_hockey(mu, e)) < mpf(10) ** -40, (direct, gauss_hockey(mu, e))
    # Subsampled Gaussian closed form: matches a direct integral.
    s, q, e = mpf(0.8), mpf(0.3), mpf(0.9)
    f0 = lambda x: npdf(x, 0, s)
    f1 = lambda x: npdf(x, 1, s)
    # the kinks (where the integrand changes sign), found independently by root-finding
    from mpmath import findroot
    k1 = findroot(lambda x: q * f1(x) + (1 - q) * f0(x) - exp(e) * f0(x), 1.5)
    rem = quad(lambda x: max(q * f1(x) + (1 - q) * f0(x) - exp(e) * f0(x), 0), [-inf, -3, 0, 1, k1, 6, inf])
    add = quad(lambda x: max(f0(x) - exp(e) * (q * f1(x) + (1 - q) * f0(x)), 0), [-inf, -6, -3, 0, 1, 3, inf])
    got = subsampled_gaussian_delta(s, mpf(1), q, e)
    assert abs(max(rem, add) - got) < mpf(10) ** -30, (rem, add, got)
    # Subsampled Laplace closed form: matches a direct integral (both directions).
    b, q, e = mpf(0.7), mpf(0.4), mpf(0.3)
    g0 = lambda x: exp(-abs(x) / b) / (2 * b)
    g1 = lambda x: exp(-abs(x - 1) / b) / (2 * b)
    kink = findroot(lambda x: q * g0(x) + (1 - q) * g1(x) - exp(e) * g1(x), 0.4)
    pts = [-inf, -5, 0, kink, 1, 6, inf]
    rem = quad(lambda x: max(q * g0(x) + (1 - q) * g1(x) - exp(e) * g1(x), 0), pts)
    add = quad(lambda x: max(g1(x) - exp(e) * (q * g0(x) + (1 - q) * g1(x)), 0), pts)
    got = subsampled_laplace_delta(b, mpf(1), q, e)
    assert abs(max(rem, add) - got) < mpf(10) ** -30, (rem, add, got)
    # One Laplace release: the subsampled formula at q = 1 and the closed form agree.
    assert abs(subsampled_laplace_delta(b, mpf(1), mpf(1), e) - laplace_delta(b, mpf(1), e)) < mpf(10) ** -40
    # Binomial composition = repeated enumeration.
    a = rr_atoms(mpf(0.4), 2)
    e = mpf(0.4)
    b1 = Atoms(binomial_atoms(5, e, -e, a[e], a[-e]))
    b2 = Atoms(a).power(5)
    for x in [mpf(0), mpf(0.5), mpf(1.3)]:
        assert abs(b1.delta(x) - b2.delta(x)) < mpf(10) ** -45
    # Atoms + Gaussian = the mixture of shifted Gaussian curves, by a direct integral.
    mech = [{"kind": "rr", "epsilon": 0.5, "categories": 2}, {"kind": "gaussian", "sigma": 2.0, "sensitivity": 1.0}]
    x = mpf(0.3)
    d = workload_delta(mech, x)
    p = 1 / (1 + exp(-mpf(0.5)))
    mu = mpf(0.5)
    # P: atom +0.5 (p) / -0.5 (1-p) plus N(mu^2/2, mu^2); integrate over the Gaussian.
    direct = quad(lambda g: npdf(g, mu ** 2 / 2, mu) * (p * max(1 - exp(x - 0.5 - g), 0) + (1 - p) * max(1 - exp(x + 0.5 - g), 0)), [-inf, x - mpf(0.5), x + mpf(0.5), inf])
    assert abs(direct - d) < mpf(10) ** -30, (direct, d)
    print("self-tests passed", file=sys.stderr)


# ---------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------

def cases():
    out = []

    def add(name, spec, eps=(), deltas=()):
        c = dict(spec)
        c["name"] = name
        res = []
        for e in eps:
            res.append({"kind": "delta_at_eps", "eps": e, "want": fmt(case_delta(c, F(e)))})
        for d in deltas:
            res.append({"kind": "eps_at_delta", "delta": d, "want": fmt(eps_at(c, F(d)))})
        c["targets"] = res
        out.append(c)
        print("  %-40s %d targets" % (name, len(res)), file=sys.stderr)

    W = lambda *m: {"kind": "workload", "mechs": list(m)}
    # Issue 24: e^eps overflows past 709 (randomized response), alone, three times, with a
    # Gaussian.
    for e in [709.0, 710.0, 800.0]:
        add("rr_eps%g" % e, W({"kind": "rr", "epsilon": e, "categories": 2}), eps=(1.0, e - 1), deltas=(1e-6,))
    add("rr_eps800_count3", W({"kind": "rr", "epsilon": 800.0, "categories": 2, "count": 3}), eps=(1.0,), deltas=(1e-6,))
    add("rr_eps800_gaussian", W({"kind": "rr", "epsilon": 800.0, "categories": 2},
                                {"kind": "gaussian", "sigma": 1.0, "sensitivity": 1.0}), eps=(1.0, 800.0), deltas=(1e-6, 1e-12))
    add("rr4_eps1000", W({"kind": "rr", "epsilon": 1000.0, "categories": 4}), eps=(1.0,), deltas=(1e-6, 1e-300))
    # Issue 24: subsampled Laplace and Gaussian past the overflow, and their neighbours.
    for b in [0.0014, 0.00141]:
        add("subsampled_laplace_b%g_q0.5" % b, {"kind": "subsampled_laplace", "scale": b, "sensitivity": 1.0, "rate": 0.5}, eps=(1.0,), deltas=(1e-6,))
    for s, q in [(0.035, 0.5), (0.04, 0.5), (0.03, 0.5), (0.01, 0.001), (0.5, 0.999), (1.0, 0.999), (1.0, 0.001)]:
        add("subsampled_gaussian_s%g_q%g" % (s, q), {"kind": "subsampled_gaussian", "sigma": s, "sensitivity": 1.0, "rate": q}, eps=(1.0,), deltas=(1e-6, 1e-300))
    # Laplace, one release, extreme scales (closed form).
    for b in [0.001, 1.0, 1000.0]:
        add("laplace_b%g" % b, {"kind": "laplace", "scale": b, "sensitivity": 1.0}, eps=(0.0, 1e-4), deltas=(1e-6, 1e-300))
    # Gaussians: delta down to 1e-300, sigma from 0.01 to 100, and a 10^12-fold.
    for s in [0.01, 1.0, 100.0]:
        add("gaussian_s%g" % s, W({"kind": "gaussian", "sigma": s, "sensitivity": 1.0}), eps=(1.0, 30.0), deltas=(1e-6, 1e-18, 1e-300))
    add("gaussian_s1e6_k1e12", W({"kind": "gaussian", "sigma": 1e6, "sensitivity": 1.0, "count": 1000000000000}), eps=(1.0,), deltas=(1e-6, 1e-300))
    # (eps, delta) pairs with a Gaussian: the binomial mixture of shifted Gaussian curves.
    add("epsdelta_k1000_gaussian", W({"kind": "eps_delta", "epsilon": 0.01, "delta": 1e-9, "count": 1000},
                                     {"kind": "gaussian", "sigma": 5.0, "sensitivity": 1.0}), eps=(0.5, 2.0), deltas=(1e-5, 2e-6))
    add("comb_gaussian", W({"kind": "eps_delta", "epsilon": 0.01, "delta": 0.0, "count": 5000},
                           {"kind": "gaussian", "sigma": 2.0, "sensitivity": 1.0}), eps=(0.5, 1.5, 3.0), deltas=(1e-6,))
    add("commensurate", W({"kind": "eps_delta", "epsilon": 0.01, "delta": 0.0, "count": 120},
                          {"kind": "eps_delta", "epsilon": 0.02, "delta": 0.0, "count": 90},
                          {"kind": "eps_delta", "epsilon": 0.05, "delta": 0.0, "count": 60}), eps=(0.0, 0.5, 1.2, 2.5), deltas=(1e-6,))
    # Poisson-subsampled binary randomized response, both directions (binomials).
    add("subsampled_rr_e1_q0.3_k2", W({"kind": "subsampled_rr", "epsilon": 1.0, "rate": 0.3, "count": 2}), eps=(0.0, 0.1, 0.3, 0.6), deltas=(1e-3,))
    add("subsampled_rr_e1_q0.999_k1000", W({"kind": "subsampled_rr", "epsilon": 1.0, "rate": 0.999, "count": 1000}), eps=(10.0,), deltas=(1e-6, 1e-300))
    add("subsampled_rr_e800_q0.5_k3", W({"kind": "subsampled_rr", "epsilon": 800.0, "rate": 0.5, "count": 3}), eps=(1.0,), deltas=(1e-6,))
    return out


def main():
    self_tests()
    cs = cases()
    path = os.path.join(HERE, "reference.json")
    with open(path, "w") as f:
        f.write('{"generator": "pld/testdata/gen_reference.py", "precision_digits": 50,\n "cases": [\n')
        for i, c in enumerate(cs):
            f.write("  " + json.dumps(c, separators=(", ", ": ")) + ("," if i < len(cs) - 1 else "") + "\n")
        f.write(" ]}\n")
    print("wrote %d cases to %s" % (len(cs), path), file=sys.stderr)


if __name__ == "__main__":
    main()
