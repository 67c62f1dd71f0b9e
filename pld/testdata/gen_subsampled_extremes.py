#!/usr/bin/env python3
"""High-precision references for Poisson-subsampled Laplace and Gaussian releases at
large sampling rates (q = 0.5 ... 0.999), one and two releases, far into the tail
(issue 24 item 7).  Writes pld/testdata/subsampled_extremes_{laplace,gaussian}.json.

Run from the repository root, once per mechanism (writes subsampled_extremes_KIND.json):
    python3 pld/testdata/gen_subsampled_extremes.py laplace     (about 5 minutes)
    python3 pld/testdata/gen_subsampled_extremes.py gaussian    (about 10 minutes)
(add --skip-self-tests to skip the self-tests, about three minutes)
Needs mpmath (tested with 1.3.0).  All arithmetic at mp.dps = 60 (self-test quadratures at 30).  Deterministic.
Shares no code with the Go implementation (nor with gen_reference.py); see
pld/testdata/README.md.

Neighbouring relation (as dpkit, pld/spec.go, Zhu, Dong & Wang 2022, Thm 11): for a base
pair (A, B) = (law of the output with the row, without it) and rate q,
    remove:  P = q A + (1-q) B,  Q = B
    add:     P = B,              Q = q A + (1-q) B
k releases compose within a direction (product pairs, losses add); the reported curve is
the larger of the two directions' k-fold curves, delta(e) = max(delta_rem^k, delta_add^k).

One release: the ratio t(x) = A(x)/B(x) is non-decreasing in x (A = N(sens, s^2) or
Lap(sens, b), B centred at 0), and P - e^y Q = B (a t + c) with constants a, c, so the
hockey-stick integrand is positive on a half-line whose end solves t(x) = -c/a in closed
form; the integral is a combination of the two CDFs.  This is written for any real y
(y < 0 too), which the two-release formula needs.

Two releases: delta2(e) = E_{x ~ P}[ h(e - L(x)) ], L = ln(P/Q) of one release and h the
one-release curve at a real argument (condition on the first output; the second release
is independent).  For Laplace, L is constant left of 0 and right of sens (two atoms, exact
masses) and the middle is an integral over [0, sens]; for the Gaussian the integral is over
the real line split at the points where the integrand turns.  Both by mpmath.quad
(tanh-sinh), with its error estimate checked against 1e-20 relative + 1e-55 absolute (the
smallest target is 1e-30; only bisection probes go below 1e-35).

eps at delta: the smallest e >= 0 with delta(e) <= target, by mpmath.findroot on
log delta(e) - log target (delta is continuous and decreasing where positive), checked by
re-evaluating delta at the answer (1e-20 relative).

Self-tests (run first): the one-release closed forms against a direct quad of
(P - e^y Q)_+ at several y (including y < 0); the two-release convolution at q = 1
(plain Gaussian) against the closed form of a Gaussian of mu = sqrt(2) sens / s (Balle &
Wang 2018, Thm 8), and for Laplace at q = 1 against the enumerated loss of pure Laplace
composed with itself by a 2-D quad at lower precision (agreement 1e-5: the 2-D
quad's kink is not on a breakpoint).
"""

import json
import os
import sys

import mpmath
from mpmath import mp, mpf, exp, expm1, log, ncdf, npdf, quad, inf, findroot, sqrt

mp.dps = 60
HERE = os.path.dirname(os.path.abspath(__file__))
SIG = 25


def fmt(v):
    return mp.nstr(v, SIG, min_fixed=-5, max_fixed=5) if v != 0 else "0"


class Base:
    """Base pair (A, B): A centred at sens, B at 0, ratio A/B non-decreasing in x."""

    def __init__(self, kind, param, sens):
        self.kind, self.s, self.sens = kind, mpf(param), mpf(sens)

    def pdf(self, x, m):
        if self.kind == "gaussian":
            return npdf(x, m, self.s)
        return exp(-abs(x - m) / self.s) / (2 * self.s)

    def cdf(self, x, m):
        if x == -inf:
            return mpf(0)
        if x == inf:
            return mpf(1)
        if self.kind == "gaussian":
            return ncdf((x - m) / self.s)
        z = (x - m) / self.s
        return exp(z) / 2 if z < 0 else 1 - exp(-z) / 2

    def sf(self, x, m):  # 1 - cdf without cancellation
        if x == -inf:
            return mpf(1)
        if x == inf:
            return mpf(0)
        if self.kind == "gaussian":
            return ncdf(-(x - m) / self.s)
        z = (x - m) / self.s
        return exp(-z) / 2 if z > 0 else 1 - exp(z) / 2

    def logratio(self, x):
        """ln(A(x)/B(x))."""
        d, s = self.sens, self.s
        if self.kind == "gaussian":
            return (2 * x * d - d * d) / (2 * s * s)
        return (abs(x) - abs(x - d)) / s

    def x_of_logratio(self, lt):
        """The x with ln t(x) = lt: +inf above the range, -inf below it."""
        d, s = self.sens, self.s
        if self.kind == "gaussian":
            return s * s * lt / d + d / 2
        if lt >= d / s:
            return inf
        if lt <= -d / s:
            return -inf
        return (lt * s + d) / 2


def mix(q, rem):
    """(alpha, beta, gamma, eta): P = alpha A + beta B, Q = gamma A + eta B."""
    if rem:
        return q, 1 - q, mpf(0), mpf(1)
    return mpf(0), mpf(1), q, 1 - q


def one_release(base, q, rem, y):
    """E_P[(1 - e^(y - L))_+] = integral of (P - e^y Q)_+, at any real y."""
    al, be, ga, et = mix(q, rem)
    ey = exp(y)
    a, c = al - ey * ga, be - ey * et     # P - e^y Q = B (a t + c)

    def mass(lo, hi):   # integral of a A + c B over (lo, hi)
        if lo == -inf:
            return a * base.cdf(hi, base.sens) + c * base.cdf(hi, 0)
        if hi == inf:
            return a * base.sf(lo, base.sens) + c * base.sf(lo, 0)
        return a * (base.cdf(hi, base.sens) - base.cdf(lo, base.sens)) + c * (base.cdf(hi, 0) - base.cdf(lo, 0))

    if a == 0:
        return max(c, mpf(0))
    r = -c / a                         # a t + c changes sign at t = r
    if a > 0:                          # positive where t > r
        if r <= 0:
            return max(a + c, mpf(0))
        xs = base.x_of_logratio(log(r))
        return max(mass(xs, inf), mpf(0)) if xs != inf else mpf(0)
    # a < 0: positive where t < r
    if r <= 0:
        return mpf(0)
    xs = base.x_of_logratio(log(r))
    return max(mass(-inf, xs), mpf(0)) if xs != -inf else mpf(0)


def loss(base, q, rem, x):
    """ln(P/Q) of one release at output x."""
    lt = base.logratio(x)
    # ln(q t + 1 - q) without overflow for large lt
    if q == 1:
        m = lt
    elif lt > 0:
        m = lt + log(q + (1 - q) * exp(-lt))
    else:
        m = log(q * exp(lt) + 1 - q)
    return m if rem else -m


def p_density(base, q, rem, x):
    al, be, _, _ = mix(q, rem)
    return al * base.pdf(x, base.sens) + be * base.pdf(x, 0)


def two_releases(base, q, rem, e):
    """E_{x~P}[h(e - L(x))] for one direction."""
    h = lambda x: p_density(base, q, rem, x) * one_release(base, q, rem, e - loss(base, q, rem, x))
    if base.kind == "laplace":
        al, be, _, _ = mix(q, rem)
        left = al * base.cdf(0, base.sens) + be * base.cdf(0, 0)          # P(x <= 0)
        right = al * base.sf(base.sens, base.sens) + be * base.sf(base.sens, 0)
        out = left * one_release(base, q, rem, e - loss(base, q, rem, mpf(-1)))
        out += right * one_release(base, q, rem, e - loss(base, q, rem, base.sens + 1))
        # h is not smooth where its argument reaches one release's extreme losses (its
        # half-line end hits 0 or sens): those x become breakpoints (L is monotone on
        # [0, sens], so each is found by bisection).
        pts = list(mpmath.linspace(0, base.sens, 9))
        Lx = lambda x: loss(base, q, rem, x)
        for yk in (Lx(mpf(-1)), Lx(base.sens + 1), log(1 - q) if q < 1 else None):
            if yk is None:
                continue
            g = lambda x: e - Lx(x) - yk
            lo, hi = mpf(0), base.sens
            if g(lo) * g(hi) >= 0:
                continue
            for _ in range(200):
                m = (lo + hi) / 2
                lo, hi = (m, hi) if g(m) * g(lo) > 0 else (lo, m)
            pts.append((lo + hi) / 2)
        mid, err = quad(h, sorted(pts), error=True)
        assert err <= mpf(10) ** -20 * mid + mpf(10) ** -55, (mid, err)
        return out + mid
    # Gaussian: split at the centres and a ladder of points in the tails, where the
    # integrand (a density times a decreasing curve) has its mass at small delta.
    s, d = base.s, base.sens
    pts = set([-inf] + [d / 2 + j * s for j in range(-24, 25, 3)] + [inf])
    # and where e - L(x) reaches the ends of the loss range, +-ln(1 - q), in closed form
    for yk in ((log(1 - q), -log(1 - q)) if q < 1 else ()):
        Lk = e - yk
        t = (exp(Lk if rem else -Lk) - (1 - q)) / q
        if t > 0:
            pts.add(base.x_of_logratio(log(t)))
    pts = sorted(pts)
    val, err = quad(h, pts, error=True)
    assert err <= mpf(10) ** -20 * val + mpf(10) ** -55, (val, err)
    return val


def curve(base, q, count, e):
    f = one_release if count == 1 else two_releases
    assert count in (1, 2)
    return max(f(base, q, True, e), f(base, q, False, e))


def eps_at(base, q, count, target):
    if curve(base, q, count, mpf(0)) <= target:
        return mpf(0)
    lo, hi = mpf(0), mpf(1)
    while curve(base, q, count, hi) > target:
        lo, hi = hi, 2 * hi
    # bracket [lo, hi] with delta(lo) > target >= delta(hi); delta(hi) may be 0 (Laplace)
    while curve(base, q, count, hi) == 0 or hi - lo > mpf(10) ** -2 * hi:
        mid = (lo + hi) / 2
        if curve(base, q, count, mid) > target:
            lo = mid
        else:
            hi = mid
    g = lambda e: log(curve(base, q, count, e)) - log(target)
    x = findroot(g, (lo, hi), solver="anderson", tol=mpf(10) ** -60)
    got = curve(base, q, count, x)
    assert abs(got - target) <= mpf(10) ** -20 * target, (x, got, target)
    return x


def self_tests():
    for kind, prm in (("gaussian", 0.7), ("laplace", 0.4)):
        b = Base(kind, prm, 1.0)
        for q in (mpf(0.3), mpf(0.99)):
            for rem in (True, False):
                P = lambda x: p_density(b, q, rem, x)
                al, be, ga, et = mix(q, rem)
                Q = lambda x: ga * b.pdf(x, b.sens) + et * b.pdf(x, 0)
                for y in (mpf(-0.5), mpf(0.2), mpf(1.5)):
                    mp.dps = 30
                    g = lambda x: P(x) - exp(y) * Q(x)
                    grid = list(mpmath.linspace(-8, 9, 69))
                    # the sign changes of the integrand, found by root-finding (not from
                    # the closed form's x*), become quadrature breakpoints
                    kinks = [findroot(g, (u, v), solver="illinois") for u, v in zip(grid, grid[1:]) if g(u) * g(v) < 0]
                    pts = sorted([-inf] + grid + kinks + [inf])
                    direct = quad(lambda x: max(g(x), 0), pts)
                    mp.dps = 60
                    cf = one_release(b, q, rem, y)
                    assert abs(direct - cf) <= mpf(10) ** -12 * max(cf, mpf(10) ** -20), (kind, q, rem, y, direct, cf)
    # two Gaussian releases at q = 1: a Gaussian of mu = sqrt(2)/s (Balle & Wang 2018, Thm 8)
    b = Base("gaussian", 1.3, 1.0)
    mu = sqrt(2) / mpf(1.3)
    for e in (mpf(0.5), mpf(3), mpf(12)):
        want = ncdf(-e / mu + mu / 2) - exp(e) * ncdf(-e / mu - mu / 2)
        got = two_releases(b, mpf(1), True, e)
        assert abs(got - want) <= mpf(10) ** -28 * want, (e, got, want)
    # two Laplace releases at q = 1: the loss of one release is e0 * U with
    # U = sign-clipped; compose by a 2-D quad of the densities at 20 digits
    b = Base("laplace", 0.5, 1.0)
    for e in (mpf(0.5), mpf(2.5)):
        mp.dps = 20
        lp = lambda x: b.logratio(x)
        f = lambda x1, x2: b.pdf(x1, 1) * b.pdf(x2, 1) * max(1 - exp(e - lp(x1) - lp(x2)), 0)
        grid = [-inf, 0, 0.5, 1, inf]
        direct = quad(f, grid, grid)
        mp.dps = 60
        got = two_releases(b, mpf(1), True, e)
        # the 2-D quad does not align with the kink of the max: good to ~1e-7 only
        assert abs(direct - got) <= mpf(10) ** -5 * got, (e, direct, got)
    print("self-tests passed", file=sys.stderr)


# Two-release Gaussian cases take minutes each (a quadrature over the line per curve
# evaluation): only at the two ends of the range of q.
GAUSSIAN_TWO = (0.5, 0.999)


def cases(kind):
    out = []
    prm = 0.1 if kind == "laplace" else 1.0
    kname = "subsampled_" + kind
    if True:
        b = Base(kind, prm, 1.0)
        for q in (0.5, 0.9, 0.99, 0.999):
            for count in (1, 2):
                if kind == "gaussian" and count == 2 and q not in GAUSSIAN_TWO:
                    continue
                qq = mpf(q)
                name = "%s_%s%g_q%g_k%d" % (kname, "b" if kind == "laplace" else "s", prm, q, count)
                targets = []
                for d in (1e-6, 1e-30):
                    x = eps_at(b, qq, count, mpf(d))
                    targets.append({"kind": "eps_at_delta", "delta": d, "want": fmt(x)})
                # delta at eps = 1 and at the eps where delta = 1e-30, rounded down to 5
                # decimals (delta there is ~1e-30 for the Gaussian; Laplace's curve is
                # steep near its largest loss, so there it is larger)
                e30 = float(mpmath.floor(x * 10 ** 5) / 10 ** 5)
                for e in (1.0, e30):
                    targets.append({"kind": "delta_at_eps", "eps": e, "want": fmt(curve(b, qq, count, mpf(e)))})
                c = {"kind": kname, ("scale" if kind == "laplace" else "sigma"): prm,
                     "sensitivity": 1.0, "rate": q, "count": count, "name": name, "targets": targets}
                print(name, [t["want"] for t in targets], file=sys.stderr)
                out.append(c)
    return out


def main():
    if "--skip-self-tests" not in sys.argv:
        self_tests()
    kind = "gaussian" if "gaussian" in sys.argv else "laplace"
    cs = cases(kind)
    path = os.path.join(HERE, "subsampled_extremes_%s.json" % kind)
    with open(path, "w") as f:
        f.write('{"generator": "pld/testdata/gen_subsampled_extremes.py", "mpmath": "%s", "precision_digits": %d,\n "cases": [\n'
                % (mpmath.__version__, mp.dps))
        for i, c in enumerate(cs):
            f.write("  " + json.dumps(c, separators=(", ", ": ")) + ("," if i < len(cs) - 1 else "") + "\n")
        f.write(" ]}\n")
    print("wrote %d cases to %s" % (len(cs), path), file=sys.stderr)


if __name__ == "__main__":
    main()
