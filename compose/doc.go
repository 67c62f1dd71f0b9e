// Package compose answers "what (ε, δ) guarantee do these releases give together?"
// exactly, by the optimal composition theorem of Kairouz, Oh and Viswanath (KOV,
// "The Composition Theorem for Differential Privacy", Thm 3.3), and by the classic
// closed-form theorems for comparison.
//
// # The exact curve
//
// For (ε_ℓ, δ_ℓ)-DP mechanisms ℓ = 1..k the worst case is the product of the canonical
// pairs of KOV eq. (17)/(18), whose privacy curve at any total ε̃ ≥ 0 is (docs/errata.md
// items 1–2)
//
//	δ(ε̃) = 1 − Π(1−δ_ℓ) + Π(1−δ_ℓ) · E[(1 − e^(ε̃ − L))₊],   L = Σ_ℓ s_ℓ ε_ℓ,
//
// with independent s_ℓ = +1 with probability e^ε_ℓ/(1+e^ε_ℓ), else −1. For k copies of
// one (ε, δ) this is the binomial sum of Thm 3.3, evaluated at every ε̃, not only at the
// grid points (k−2i)ε. NewCurve evaluates it:
//
//   - one distinct ε (any k up to 10^12): exactly, summing only the O(√k) binomial terms
//     that carry normal-range mass (Loader's binomial, corrected for the rounding of
//     e^ε/(1+e^ε));
//   - a few distinct ε values: exactly, as the product of those binomials;
//   - many distinct ε values (exact evaluation is #P-hard, Murtagh–Vadhan 2016): a
//     certified bracket, computed by package pld on lattices (second-order
//     discretisations of blocks of releases). Without Options.Tolerance the lattice is
//     refined toward DefaultTolerance while it fits in about a second (pld.DefaultWork)
//     and the width reached is reported; with it, until the width meets it.
//
// # Soundness
//
// Every reported ε or δ is at or above the exact optimum: truncated binomial tails are
// bounded and moved to larger losses, probability masses are inflated by a relative
// 1e-12 (Loader's binomial is accurate to ~1e-13), the floor 1 − Π(1 − δ_ℓ) and sums of
// ε_ℓ and δ_ℓ are rounded up, and every inverted ε is checked against the directly summed
// δ and moved up until it holds. An exact result may therefore exceed the true δ by at
// most a relative 1e-12 plus 1e-300 absolute; the ε reported for a target δ exceeds the
// exact one by the corresponding (much smaller) amount, at most 1e-9 relative for every k
// up to 10^12 (compose/testdata). The reported lower value is a certified value the
// optimum is at or above.
//
// # Long computations
//
// The functions that may run for more than about a second take a context
// (EpsilonContext, DeltaContext, NewCurveContext, MaxEpsilonPerQueryContext,
// MaxQueriesContext) and stop with its error when it is done; Options.Progress reports
// a bracket's progress.
//
// # Adaptivity
//
// These guarantees hold for k-fold adaptive composition (KOV §3): the analyst may choose
// each mechanism, query and pair of databases based on earlier outputs, provided the
// privacy parameters (ε_ℓ, δ_ℓ) of every step were fixed in advance. When the parameters
// themselves are chosen adaptively, use a privacy filter instead (package ledger's
// adaptive policy); applying these theorems there is unsound.
package compose
