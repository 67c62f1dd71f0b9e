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
// Because the map L ↦ (1 − e^(ε−L))₊ is non-decreasing, moving probability mass to larger
// loss values can only raise δ(ε) at every ε. Every approximation in this package is of
// that kind: an "upper" distribution moves mass up (or to +∞) and so certifies an upper
// bound on the true curve; a "lower" distribution moves mass down (or drops it) and
// certifies a lower bound. The gap between the two is the reported bracket.
//
// Discrete holds an arbitrary finite support; Lattice holds a support on a uniform grid
// and composes by (FFT) convolution with its floating-point error tracked, so that the
// bounds stay certified.
package pld
