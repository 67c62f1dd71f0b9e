#!/usr/bin/env python3
"""Independent reference for delta far in the tail (issue 24 item 3): delta(eps) of k
Poisson-subsampled Gaussian releases where the privacy loss sum reaches eps through one
rare large loss plus the bulk ("one big jump": the exponentially tilted sum is a mixture
of separate bumps with little mass near eps, so a saddle-point or Edgeworth expansion, as
in gen_tiny_delta.py, does not apply).  Writes pld/testdata/tail_delta.json.

Run from the repository root:   python3 pld/testdata/gen_tail_delta.py [mixed|heavy]
("mixed": workloads of several distinct mechanisms, into tail_delta_mixed.json; M(z) is
then the product of each mechanism's M_i(z)^k_i.  "heavy": the same for subsampled
Gaussians with 10^5-10^6 releases each, into tail_delta_heavy.json.)
Needs mpmath (gmpy2 makes it several times faster).  mp.dps = 50.  Deterministic.

Method (shares nothing with package pld: no lattice, no FFT, no tilted convolution).
One release is the pair P = (1-q) N(0, s^2) + q N(1, s^2), Q = N(0, s^2) (remove) or
(Q, P) (add), with loss L = ln(first/second)(x).  Its moment generating function under
the first distribution, M(z) = E[e^(z L)] = int first^(1+z) second^(-z) dx, is finite for
every complex z.  Since (1 - e^(-t))_+ has Laplace transform 1/(z(z+1)) (Re z > 0), the
Bromwich inversion integral gives delta exactly for every contour c > 0:

    delta(eps) = E[(1 - e^(eps - S))_+] = (1/pi) int_0^inf Re[ M(c+iy)^k e^(-(c+iy) eps) / ((c+iy)(c+iy+1)) ] dy,

S the sum of k losses.  M is computed by composite Gauss-Legendre quadrature in x over the
window where the integrand exceeds e^(-110) of its largest value, the y integral by
composite Gauss-Legendre over [0, Y], Y where |M(c+iy)/M(c)|^k has fallen below e^(-120).
c is the saddle point (k M'(c)/M(c) = eps), where cancellation in the y integral is
least; it is still large here (the tilted sum has little mass at eps: that is what makes
these cases hard), which 50 digits absorb.

Convergence check (written into the json as "check_rel_diff"): each value is computed
twice, on a second contour c' = 0.96 c with finer x and y grids (1.5 times the nodes per
panel, panels a third narrower); the exact integral does not depend on c, so the two
agree only if both quadratures have converged.  Tests may use 1e-6 relative at most.
"""

import json
import os
import sys
from multiprocessing import Pool

from mpmath import mp, mpf, mpc, exp, log, log1p, sqrt, pi, cos, sin, nstr, fabs
from mpmath.calculus.quadrature import GaussLegendre

try:
    import gmpy2
except ImportError:
    gmpy2 = None

mp.dps = 50
HERE = os.path.dirname(os.path.abspath(__file__))


def pair(sigma, q, direction):
    s2 = mpf(sigma) ** 2
    q = mpf(q)

    def lq(x):  # ln N(0, s^2)(x)
        return -x * x / (2 * s2) - log(sqrt(2 * pi * s2))

    def lp(x):  # ln[(1-q) N(0, s^2) + q N(1, s^2)](x)
        return lq(x) + log1p(q * (exp((2 * x - 1) / (2 * s2)) - 1))

    if direction == "remove":
        return lp, lq
    return lq, lp


_gl = {}


def gl_nodes(n):
    """Gauss-Legendre nodes and weights on [-1, 1], 3*2^(n-1) points."""
    if n not in _gl:
        _gl[n] = GaussLegendre(mp).calc_nodes(n, mp.prec)
    return _gl[n]


def composite(a, b, width, n):
    """Nodes and weights of composite Gauss-Legendre on [a, b], panels about width wide."""
    panels = max(1, int((b - a) / width + 1))
    h = (b - a) / panels
    out = []
    for p in range(panels):
        lo = a + p * h
        for t, w in gl_nodes(n):
            out.append((lo + (t + 1) * h / 2, w * h / 2))
    return out


def window(lf, ls, c):
    """x range where the integrand first^(1+c) second^(-c) is within e^(-110) of its max."""
    xs = [mpf(x) / 4 for x in range(-4 * 300, 4 * 500)]
    g = [(1 + c) * lf(x) - c * ls(x) for x in xs]
    top = max(g)
    keep = [x for x, v in zip(xs, g) if v > top - 110]
    return keep[0] - 2, keep[-1] + 2


def delta(sigma, q, k, eps, direction, cscale=1, fine=False):
    return delta_mix([(sigma, q, k)], eps, direction, cscale, fine)


def delta_mix(mechs, eps, direction, cscale=1, fine=False, panel=1):
    """delta(eps) of the composition of k_i releases of each mechanism in mechs, all in
    the same direction: M(z) is the product of the M_i(z)^k_i.  A mechanism is
    (sigma, q, k), a subsampled Gaussian by quadrature (q = 1: the Gaussian, in closed
    form), or ("laplace", scale, k) in closed form (both symmetric: one direction).
    panel scales the quadrature panels' width (x and y)."""
    ks = [m[-1] for m in mechs]
    eps = mpf(eps)
    width, n = (mpf(2) / 3, 4) if fine else (mpf(1), 4)
    width *= mpf(panel)

    def mgf_nodes(lf, ls, c):
        a, b = window(lf, ls, c)
        nodes = composite(a, b, width, n)
        L = [lf(x) - ls(x) for x, _ in nodes]
        logE = [log(w) + lf(x) + c * Lx for (x, w), Lx in zip(nodes, L)]
        return L, logE

    # Each mechanism as z -> ln M(z) (complex z) and c -> the tilted mean M'(c)/M(c).
    logms, means = [], []
    for m in mechs:
        if m[0] == "laplace":
            e0 = 1 / mpf(m[1])
            # loss e0 on x <= 0 (P-mass 1/2), -e0 on x >= 1 (1/2 e^-e0), e0 - 2t between
            logm = (lambda e0: lambda z: log(exp(z * e0) / 2 + exp(-(1 + z) * e0) / 2
                                               + exp(z * e0) * (1 - exp(-(2 * z + 1) * e0)) / (2 * (2 * z + 1))))(e0)
        elif m[1] == 1:
            mu2 = 1 / mpf(m[0]) ** 2  # loss N(mu^2/2, mu^2): ln M(z) = mu^2 z (z + 1) / 2
            logm = (lambda mu2: lambda z: mu2 * z * (z + 1) / 2)(mu2)
        else:
            logm = None
        if logm is not None:
            logms.append(logm)
            means.append((lambda f: lambda c: mp.diff(lambda t: f(t), c))(logm))
            continue
        lf, ls = pair(m[0], m[1], direction)

        def logm_q(z, lf=lf, ls=ls, state={}):
            c = z.real if isinstance(z, mpc) else z
            if c not in state:
                L, logE = mgf_nodes(lf, ls, c)
                top = max(logE)
                E = [exp(v - top) for v in logE]
                M0 = sum(E)
                state[c] = (log(M0) + top, make_ratio([e / M0 for e in E], L))
            lm0, ratio = state[c]
            y = z.imag if isinstance(z, mpc) else 0
            return lm0 + (log(ratio(y)) if y != 0 else 0)

        def mean_q(c, lf=lf, ls=ls):
            L, logE = mgf_nodes(lf, ls, c)
            top = max(logE)
            E = [exp(v - top) for v in logE]
            return sum(e * l for e, l in zip(E, L)) / sum(E)
        logms.append(logm_q)
        means.append(mean_q)

    # The saddle point (its value only has to be near the optimum: the integral does not
    # depend on it).
    def mean_gap(c):
        return sum(k * f(c) for f, k in zip(means, ks)) - eps

    lo, hi = mpf(0), mpf(1)
    while mean_gap(hi) < 0:
        lo, hi = hi, 2 * hi
    for _ in range(30):
        mid = (lo + hi) / 2
        if mean_gap(mid) < 0:
            lo = mid
        else:
            hi = mid
    c = (lo + hi) / 2 * cscale

    logMk = sum(k * f(c) for f, k in zip(logms, ks))  # sum of k_i ln M_i(c)

    def log_ratio_k(y):  # sum of k_i ln(M_i(c+iy)/M_i(c))
        z = mpc(c, y)
        return sum(k * (f(z) - f(c)) for f, k in zip(logms, ks))

    # Y: the product of the |ratio|^k below e^(-120), found by doubling.
    Y = mpf(1)
    while log_ratio_k(Y).real > -120:
        Y *= 2
    # A finer look between Y/2 and Y to cut the range.
    step = Y / 32
    y = Y / 2
    while y < Y and log_ratio_k(y).real > -120:
        y += step
    Y = y
    total = mpf(0)
    for yy, w in composite(mpf(0), Y, width, n):
        z = mpc(c, yy)
        total += w * (exp(log_ratio_k(yy) - mpc(0, 1) * yy * eps) / (z * (z + 1))).real
    return exp(logMk - c * eps) * total / pi, c


def make_ratio(E, L):
    """y -> sum E_i e^(i y L_i).  The inner sums run on gmpy2's MPFR at the same
    precision when it is there (several times faster), on mpmath otherwise."""
    if gmpy2 is not None:
        gmpy2.get_context().precision = mp.prec
        Eg = [gmpy2.mpfr(str(e)) for e in E]
        Lg = [gmpy2.mpfr(str(l)) for l in L]

        def ratio(y):
            yg = gmpy2.mpfr(str(y))
            re, im = gmpy2.mpfr(0), gmpy2.mpfr(0)
            for e, l in zip(Eg, Lg):
                s, co = gmpy2.sin_cos(yg * l)
                re += e * co
                im += e * s
            return mpc(mpf(str(re)), mpf(str(im)))
        return ratio

    def ratio(y):
        re = sum(e * cos(y * l) for e, l in zip(E, L))
        im = sum(e * sin(y * l) for e, l in zip(E, L))
        return mpc(re, im)
    return ratio


def task(t):
    sigma, q, k, eps, direction = t
    d, c = delta(sigma, q, k, eps, direction)
    d2, _ = delta(sigma, q, k, eps, direction, cscale=mpf("0.96"), fine=True)
    diff = fabs(d - d2) / fabs(d)
    print(t, nstr(d, 15), nstr(d2, 15), "rel diff", nstr(diff, 3), file=sys.stderr, flush=True)
    return t, nstr(d, 20), nstr(c, 10), nstr(diff, 3)


def main():
    todo = [(4, 0.01, 1000, e) for e in (2, 3, 4)] + [(2, 0.05, 100, 3)]
    tasks = [m + (d,) for d in ("remove", "add") for m in todo]
    done = {}
    # Two worker processes; the file is rewritten (complete cases only) as results come.
    with Pool(2) as pool:
        for t, d, c, diff in pool.imap_unordered(task, tasks):
            done[t] = (d, c, diff)
            write(todo, done)


def write(todo, done):
    cases = []
    for sigma, q, k, eps in todo:
        rem, add = done.get((sigma, q, k, eps, "remove")), done.get((sigma, q, k, eps, "add"))
        if rem is None or add is None:
            continue
        cases.append(row(rem, add, name="subsampled_gaussian_s%g_q%g_k%d_eps%g" % (sigma, q, k, eps),
                         mechanism={"kind": "subsampled_gaussian", "sigma": sigma, "sensitivity": 1, "rate": q, "count": k},
                         eps=eps))
    write_json("tail_delta.json", "pld/testdata/gen_tail_delta.py", cases)


def row(rem, add, **head):
    """A case: head, then both directions' (delta, saddle, check) and the larger delta."""
    return dict(head, **{
        "delta_remove": rem[0], "delta_add": add[0],
        "want": nstr(max(mpf(rem[0]), mpf(add[0])), 20),
        "saddle_remove": rem[1], "saddle_add": add[1],
        "check_rel_diff": nstr(max(mpf(rem[2]), mpf(add[2])), 3),
    })


def write_json(name, generator, cases):
    with open(os.path.join(HERE, name), "w") as f:
        json.dump({"generator": generator, "precision_digits": 50,
                   "method": "Bromwich inversion of the exact moment generating function",
                   "cases": cases}, f, indent=1)
        f.write("\n")


def mixed_task(t):
    mechs, eps, panel, direction = t
    d, c = delta_mix(mechs, eps, direction, panel=panel)
    d2, _ = delta_mix(mechs, eps, direction, cscale=mpf("0.96"), fine=True, panel=panel)
    diff = fabs(d - d2) / fabs(d)
    print(t, nstr(d, 15), nstr(d2, 15), "rel diff", nstr(diff, 3), file=sys.stderr, flush=True)
    return t, nstr(d, 20), nstr(c, 10), nstr(diff, 3)


def mech_name(m):
    if m[0] == "laplace":
        return "laplace_b%g_k%d" % m[1:]
    if m[1] == 1:
        return "gaussian_s%g_k%d" % (m[0], m[2])
    return "subsampled_gaussian_s%g_q%g_k%d" % m


def mech_json(m):
    if m[0] == "laplace":
        return {"kind": "laplace", "scale": m[1], "sensitivity": 1, "count": m[2]}
    if m[1] == 1:
        return {"kind": "gaussian", "sigma": m[0], "sensitivity": 1, "count": m[2]}
    return {"kind": "subsampled_gaussian", "sigma": m[0], "sensitivity": 1, "rate": m[1], "count": m[2]}


def main_mixed():
    """tail_delta_mixed.json: workloads of several distinct mechanisms.  Cases already in
    the file (by name) are kept, not computed again."""
    # (mechanisms, eps, panel): panel scales the quadrature panels (the Gaussian's slowly
    # decaying factor needs half-width panels: at full width the check was 1.04e-7).
    todo = [(((4, 0.01, 500), (2, 0.05, 50)), 3, 1),
            (((4, 0.01, 500), (50, 1, 10)), 3, 0.5),  # a Gaussian in the mix (two bumps)
            ((("laplace", 1, 1000), ("laplace", 0.5, 100)), 900, 1)]  # Laplace atoms, far out
    name = lambda mechs, eps: "+".join(mech_name(m) for m in mechs) + "_eps%g" % eps
    path = os.path.join(HERE, "tail_delta_mixed.json")
    old = {}
    if os.path.exists(path):
        with open(path) as f:
            old = {c["name"]: c for c in json.load(f)["cases"]}
    tasks = [(m, e, p, d) for d in ("remove", "add") for m, e, p in todo if name(m, e) not in old
             and not (d == "add" and symmetric(m))]
    with Pool(2) as pool:
        done = {(m, e, d): r for (m, e, p, d), *r in pool.imap_unordered(mixed_task, tasks)}
    cases = []
    for mechs, eps, _ in todo:
        if name(mechs, eps) in old:
            cases.append(old[name(mechs, eps)])
            continue
        rem = done[(mechs, eps, "remove")]
        add = rem if symmetric(mechs) else done[(mechs, eps, "add")]
        cases.append(row(rem, add, name=name(mechs, eps), mechanisms=[mech_json(m) for m in mechs], eps=eps))
    write_json("tail_delta_mixed.json", "pld/testdata/gen_tail_delta.py mixed", cases)


def main_heavy():
    """tail_delta_heavy.json: subsampled Gaussians with 10^5-10^6 releases each, far in
    the tail (one release's loss is tiny next to the lattice spacing of the total)."""
    mechs = ((5, 0.01, 1000000), (10, 0.01, 1000000), (8, 0.02, 100000))
    todo = [(mechs, 40, 1), (mechs, 50, 1)]
    name = lambda mechs, eps: "+".join(mech_name(m) for m in mechs) + "_eps%g" % eps
    tasks = [(m, e, p, d) for d in ("remove", "add") for m, e, p in todo]
    done = {}
    with Pool(2) as pool:
        for (m, e, p, d), *r in pool.imap_unordered(mixed_task, tasks):
            done[(m, e, d)] = r
            cases = [row(done[(m, e, "remove")], done[(m, e, "add")], name=name(m, e),
                         mechanisms=[mech_json(x) for x in m], eps=e)
                     for m, e, _ in todo if (m, e, "remove") in done and (m, e, "add") in done]
            write_json("tail_delta_heavy.json", "pld/testdata/gen_tail_delta.py heavy", cases)


def symmetric(mechs):
    """Gaussians and Laplace only: both directions have the same loss distribution."""
    return all(m[0] == "laplace" or m[1] == 1 for m in mechs)


if __name__ == "__main__":
    if sys.argv[1:] == ["mixed"]:
        main_mixed()
    elif sys.argv[1:] == ["heavy"]:
        main_heavy()
    else:
        main()
