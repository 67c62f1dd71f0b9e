// Package noise generates the random noise of differentially private releases: a secure
// source of random bits, exact samplers for integer distributions, and secure continuous
// noise built on them.
//
// # Sources
//
// Every sampler draws from a [Source]: [Secure] (crypto/rand, the default of every
// release in dpkit) or [Seeded] (reproducible, for tests only).
//
// # Exact integer samplers
//
// [BernoulliExp], [DiscreteLaplace] and [DiscreteGaussian] follow Canonne, Kamath and
// Steinke 2020 ("The Discrete Gaussian for Differential Privacy", Algorithms 1–3): they
// use only integer arithmetic on random bits, so the distributions are exactly the
// stated ones. Random bits are consumed lazily (a Bernoulli(p) trial compares the binary
// expansion of p with random bits and stops at the first difference, two bits on
// average), which keeps a secure draw well under a microsecond.
//
// The one inexactness is a truncation that keeps integers within 64 bits: draws whose
// magnitude would reach 2^62 are redrawn. For the parameters the constructors accept
// this event has probability below exp(−2^14), which is below the smallest positive
// float64 (4.9e-324); it is not included in any reported δ.
//
// # Secure continuous noise
//
// [SecureLaplace], [SecureGaussian] and [Staircase] avoid the floating-point attack of
// Mironov (2012): the value is snapped to a grid of power-of-two spacing (the
// granularity), exact integer noise is added on the grid, and the set of outputs is the
// grid whatever the input. The privacy accounting uses the grid sensitivity ⌈Δ/g⌉
// (see secure.go). Vectors with ℓ2 sensitivity ([NewSecureGaussianL2]) use the grid ℓ2
// sensitivity Δ/g + √dims and the concentrated-DP bound of Canonne, Kamath and Steinke
// for the multivariate discrete Gaussian. [HeavyTail], the density ∝ 1/(1+|z|^γ) of
// smooth-sensitivity releases, is sampled in floating point (see mechanism.Median for
// what that does and does not guarantee).
package noise
