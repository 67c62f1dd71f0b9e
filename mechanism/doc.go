// Package mechanism implements the basic differentially private mechanisms of Zhipeng
// Cai's "Differential Privacy" lecture slides (Laplace and exponential mechanisms, smooth
// sensitivity), of Kairouz, Oh and Viswanath (KOV) §4 and of the
// thesis (staircase, Gaussian, geometric, randomized response with the (ε, δ) 4-output
// form of KOV eq. 16), report-noisy-max and the smooth-sensitivity median.
//
// Each mechanism is built by a validating constructor (NewLaplace(LaplaceOptions{…}))
// whose privacy-relevant fields (ε, δ, sensitivity) are required and never defaulted,
// and offers
//
//   - Guarantee(): the (ε, δ) it satisfies (never below the truth);
//   - accuracy: Variance() and a (1−β) bound on the noise (Interval, and VectorBound or
//     UtilityBound where they apply);
//   - a release function taking the true value and a noise.Source (nil means the
//     package's shared noise.Secure source);
//   - its parameters (Scale, Sigma, Sensitivity, Epsilon, …) for building its privacy
//     loss distribution, and for the discrete mechanisms the defining pair of output
//     distributions (Pair, a *region.Pair).
//
// # One interface, one description
//
// Every mechanism implements Mechanism: Guarantee, PLD (a privacy loss distribution
// for package pld that dominates the mechanism's own, for the accounting core) and
// Descriptor (its typed, versioned JSON description, {"kind":…,"version":1,…}, from
// which FromDescriptor rebuilds it). The ledger records releases by their descriptors.
// Several mechanisms released together form a Composition; mechanisms run outside dpkit
// and known by their noise are described by the accounting-only kinds (LaplaceNoise,
// GaussianNoise, GeometricNoise, EpsilonDelta, Subsampled; DescribePLD maps a pld
// mechanism to one).
//
// # Secure noise
//
// Real-valued releases (Laplace, Gaussian, staircase) use the secure samplers of package
// noise: the value is snapped to a power-of-two grid (Granularity) and exact integer
// noise is added, so that the set of outputs does not depend on the input (Mironov
// 2012). The privacy accounting includes the rounding: Guarantee() is exact for the grid
// mechanism, not only for its continuous idealisation. The exponential mechanism
// quantizes utilities to a grid fixed by Δu and computes its exponents exactly, so its
// ε covers the sampled distribution (Exponential). The one release whose guarantee is
// for idealised noise is the ε-DP (heavy-tail) smooth-sensitivity median; its output
// grid is exact (Median).
//
// # Errors
//
// Invalid parameters are reported as *dpkit.ParamError naming the field and its range;
// requests that cannot be met as *dpkit.InfeasibleError. The package never panics on
// user input and never logs.
package mechanism
