// Package gce analyses the composition of differentially private releases on different
// databases with the generalized composition experiment (GCE) of Hartmann, Bindschaedler
// and West, "On the Choice of Databases in Differential Privacy Composition" (HBW),
// with the exact optimal composition of package compose underneath.
//
// # Model
//
// Step i of k runs an (ε_i, δ_i)-DP mechanism M_i on one of two neighbouring databases,
// x_i⁰ (without the target's record) or x_i¹ (with it), chosen by the bit b_i of a
// membership vector b ∈ {0,1}^k (Alg. 2). An adversary holds two hypotheses p0, p1 —
// distributions over membership vectors — and the guarantee is hypothesis DP (Def. 3):
// for every set S of views, E_{b∼p0} Pr[V^b ∈ S] ≤ e^ε E_{b∼p1} Pr[V^b ∈ S] + δ and the
// same with p0 and p1 exchanged. The classic composition experiment is the pair
// (δ_0⃗, δ_1⃗), and DP for it implies HDP for every pair (Thm 1), so the classic
// composition is always a valid answer; constraints and priors can give smaller ε.
//
// Two fixed vectors b0, b1 differ only at the steps b0 ⊕ b1; the other steps are
// (0, 0)-indistinguishable, so the optimal guarantee of the pair is the optimal
// composition (KOV Thm 3.3) of the mechanisms at the differing steps. This holds for
// adaptively chosen mechanisms and databases, provided every step's (ε_i, δ_i) is fixed
// in advance (see package compose, Adaptivity).
//
// # Analyses
//
//   - HDP: an explicit pair of hypotheses, coupled by RefineTuples (Alg. 3, exact
//     rationals, FIFO) and combined by a sound rule. The paper's general recipe
//     ε = ln Σ w_i e^{ε_i} is unsound unless one hypothesis is a point mass
//     (docs/errata.md, HBW item 1); HDP uses it only then, and otherwise the
//     weighted-curve rule δ(ε) = Σ w_i δ_i(ε) (joint convexity of the hockey-stick
//     divergence), which is the errata's "ε = max ε_i, δ = Σ w_i δ_i" at its best.
//   - AtMost and Allowed: membership constraints (§V-A): the target is in at most m of
//     the k databases, or its vector lies in an explicit set. The guarantee is the worst
//     composition over the differing sets the constraint allows (unbounded: c vs 0⃗;
//     bounded: c vs c'), compared with the classic composition and with parallel
//     composition (Def. 5, Thm 2). For heterogeneous mechanisms not ordered by
//     dominance, the worst "at most m" subset is found by branch and bound (see
//     worstSubset in search.go for the bound and its proof).
//   - UniformPrior, UniformPriorSimple, Corollary6, Corollary7: the adversary with an
//     uninformative prior, p0 = δ_0⃗ against p1 = U(B \ {0⃗}) (§V-B): Thm 3 with the exact
//     composition, eq. (3)/(4), Cor. 6 and 7, through Subsample (amplification by
//     subsampling with q = ½, Balle–Barthe–Gaboardi 2018 Thm 8).
//
// # Soundness
//
// A reported ε is never below the value of the theorem or rule that produced it:
// compositions are compose's upper values (at most a relative 1e-12 above the optimum,
// see compose), and closed forms evaluated here in float64 are moved up by a relative
// 1e-12. Invalid parameters are *dpkit.ParamError; a δ no analysis can reach is an error
// matching dpkit.ErrInfeasible. The errata for HBW (docs/errata.md items 1–6) are
// applied throughout: index typos of §V-A, the bounded case of parallel composition
// (2m), the generic comparisons of Example 3.
package gce
