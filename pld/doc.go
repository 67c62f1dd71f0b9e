// Package pld represents privacy-loss distributions (PLDs) and reads privacy curves off
// them, with certified rounding.
//
// A dominating pair (P, Q) has privacy loss L = ln(P(x)/Q(x)) for x ~ P, and its privacy
// curve is the hockey-stick divergence
//
//	δ(ε) = E_P[(1 − e^(ε − L))₊] = P[L = +∞] + Σ_{l > ε} Pr[L = l] · (1 − e^(ε − l))
//
// (KOV §2; docs/errata.md item 1). Composition of independent releases adds their losses,
// so the PLD of a composition is the convolution of the PLDs.
//
// Every approximation keeps a certified bracket: an "upper" distribution whose curve is
// at or above the true one and a "lower" one at or below it. With Y = e^(−L), the curve of
// a composition is convex in each release's Y, and non-decreasing in each loss, so the
// upper side may spread mass (a mean-preserving spread of Y, "connect the dots") or move
// it to larger losses or +∞, and the lower side may merge or mix outcomes
// (post-processing) or move mass down. On a lattice of spacing h both sides err to second
// order in h for smooth distributions; few-atom releases are made smooth by enumerating
// them in blocks (Compose). Floating-point error is tracked as a relative and an absolute
// term of the curve (Lattice.Rel, Lattice.Err) and added to the bracket's ends.
//
// Discrete holds an arbitrary finite support; Lattice a support on a uniform grid,
// composed by direct sums or FFT (double-double when the float64 error bound is too
// large). Compose accounts a workload of mechanisms (Gaussians in closed form). The
// mathematics, with the errata that matter, is in docs/composition.md.
package pld
