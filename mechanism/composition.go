package mechanism

import (
	"fmt"
	"math"
	"math/big"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/pld"
)

// MaxParts is the largest number of parts of a Composition.
const MaxParts = 1 << 16

// CompositionOptions lists the parts of a Composition, by their descriptors.
type CompositionOptions struct {
	Parts []Descriptor `json:"parts"`
}

func (CompositionOptions) kind() string { return "composition" }

func (o CompositionOptions) build() (Mechanism, error) {
	if len(o.Parts) == 0 || len(o.Parts) > MaxParts {
		return nil, perr("parts", len(o.Parts), fmt.Sprintf("between 1 and %d parts", MaxParts))
	}
	ms := make([]Mechanism, len(o.Parts))
	for i, d := range o.Parts {
		m, err := FromDescriptor(d)
		if err != nil {
			return nil, fmt.Errorf("mechanism: parts[%d]: %w", i, err)
		}
		ms[i] = m
	}
	return NewComposition(ms...)
}

// Composition is several mechanisms run on the same data with independent randomness
// and released together, as one release (e.g. the noisy sum and the noisy count of an
// average, or the aggregates of one multi-aggregate query).
//
// Its Guarantee is basic composition, (Σ ε_i, Σ δ_i) summed exactly and rounded up
// (Dwork and Roth 2014, Thm 3.16; valid for any parts). Its PLD is exact when every
// part's PLD is Gaussian (μ-GDP parts compose to μ = √(Σ μ_i²), Dong, Roth and Su 2022,
// Cor. 3.3), and otherwise the canonical pair of its Guarantee, which dominates it (KOV
// Thm 2.4); Items gives the parts' PLDs for pld.Compose, which composes them exactly.
type Composition struct {
	parts []Mechanism
	g     dpkit.Budget
}

// NewComposition returns the composition of parts (at least one, at most MaxParts).
func NewComposition(parts ...Mechanism) (*Composition, error) {
	if len(parts) == 0 || len(parts) > MaxParts {
		return nil, perr("parts", len(parts), fmt.Sprintf("between 1 and %d parts", MaxParts))
	}
	eps, delta := new(big.Rat), new(big.Rat)
	for i, m := range parts {
		if m == nil {
			return nil, perr(fmt.Sprintf("parts[%d]", i), "nil", "a mechanism")
		}
		g := m.Guarantee()
		eps.Add(eps, new(big.Rat).SetFloat64(g.Epsilon))
		delta.Add(delta, new(big.Rat).SetFloat64(g.Delta))
	}
	g := dpkit.Budget{Epsilon: ratUp(eps), Delta: math.Min(1, ratUp(delta))}
	if math.IsInf(g.Epsilon, 0) {
		return nil, perr("parts", len(parts), "parts whose ε sum to a finite float64")
	}
	return &Composition{parts: append([]Mechanism(nil), parts...), g: g}, nil
}

// ratUp returns the smallest float64 ≥ r.
func ratUp(r *big.Rat) float64 {
	f, _ := r.Float64()
	if new(big.Rat).SetFloat64(f).Cmp(r) < 0 {
		f = math.Nextafter(f, math.Inf(1))
	}
	return f
}

// Parts returns the composed mechanisms.
func (c *Composition) Parts() []Mechanism { return append([]Mechanism(nil), c.parts...) }

// Guarantee returns (Σ ε_i, Σ δ_i), rounded up, δ at most 1.
func (c *Composition) Guarantee() dpkit.Budget { return c.g }

// Descriptor returns {"kind":"composition","version":1,"parts":[…]}.
func (c *Composition) Descriptor() Descriptor {
	ds := make([]Descriptor, len(c.parts))
	for i, m := range c.parts {
		ds[i] = m.Descriptor()
	}
	return Describe(CompositionOptions{Parts: ds})
}

// Items returns each part's PLD as one pld.Item, for pld.Compose.
func (c *Composition) Items() ([]pld.Item, error) {
	items := make([]pld.Item, len(c.parts))
	for i, m := range c.parts {
		pm, err := m.PLD()
		if err != nil {
			return nil, err
		}
		items[i] = pld.Item{Mechanism: pm, Count: 1}
	}
	return items, nil
}

// PLD returns pld.Gaussian with μ = √(Σ μ_i²) (rounded up) when every part's PLD is a
// pld.Gaussian, else the canonical (ε, δ) pair of Guarantee.
func (c *Composition) PLD() (pld.Mechanism, error) {
	items, err := c.Items()
	if err != nil {
		return nil, err
	}
	if mu, ok := gaussianMu(items); ok {
		return pld.Gaussian{Sigma: 1, Sensitivity: mu}, nil
	}
	return pld.EpsilonDelta{Epsilon: c.g.Epsilon, Delta: c.g.Delta}, nil
}

// gaussianMu returns √(Σ μ_i²), rounded up, when every item is a pld.Gaussian.
func gaussianMu(items []pld.Item) (float64, bool) {
	var sum float64
	for _, it := range items {
		g, ok := it.Mechanism.(pld.Gaussian)
		if !ok {
			return 0, false
		}
		mu := quoUp(g.Sensitivity, g.Sigma)
		sum += mu * mu * float64(it.Count)
	}
	// n products and n sums, each rounded by at most half an ulp: (1 + 2^-52)^(2n+2)
	// ≤ 1 + (2n+2)·2^-51 for n ≤ MaxParts; the square root adds half an ulp more.
	n := float64(len(items))
	sum *= 1 + (2*n+2)*0x1p-51
	return math.Nextafter(math.Sqrt(sum), math.Inf(1)), true
}
