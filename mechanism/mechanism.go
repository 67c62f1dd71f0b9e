package mechanism

import (
	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/pld"
)

// Mechanism is what every mechanism of this package offers, whatever its release
// method (Release, ReleaseInt, ReleaseVector, Select, …, whose signatures differ by
// kind):
//
//   - Guarantee: the (ε, δ) it satisfies, never below the truth;
//   - PLD: a privacy loss distribution for package pld that dominates the mechanism's
//     own (its exact one where dpkit knows it, else the canonical pair of its
//     guarantee), for the accounting core and the ledger;
//   - Descriptor: its typed, versioned description, from which FromDescriptor rebuilds
//     it — the form in which the ledger records what a release ran.
//
// The implementations are the pointer types returned by the constructors (NewLaplace,
// NewGaussian, …), Composition, and the accounting-only mechanisms that FromDescriptor
// returns for mechanisms known by their noise alone (kinds laplace_noise,
// gaussian_noise, geometric_noise, epsilon_delta, subsampled).
type Mechanism interface {
	Guarantee() dpkit.Budget
	PLD() (pld.Mechanism, error)
	Descriptor() Descriptor
}

var (
	_ Mechanism = (*Laplace)(nil)
	_ Mechanism = (*Geometric)(nil)
	_ Mechanism = (*Gaussian)(nil)
	_ Mechanism = (*Exponential)(nil)
	_ Mechanism = (*Quantile)(nil)
	_ Mechanism = (*RandomizedResponse)(nil)
	_ Mechanism = (*RandomizedResponse4)(nil)
	_ Mechanism = (*Median)(nil)
	_ Mechanism = (*Staircase)(nil)
	_ Mechanism = (*Composition)(nil)
	_ Mechanism = (*Accounted)(nil)
)
