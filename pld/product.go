package pld

import "sort"

// Product returns the distribution of the sum of independent losses from a and b (the
// privacy-loss distribution of the composition), by direct enumeration of the atom
// pairs: exact up to one rounding per sum and product.
//
// Atoms whose mass is below prune are not kept: with upper = true their mass moves to
// the largest loss of the product (so δ(ε) can only rise), with upper = false it is
// dropped (so δ(ε) can only fall). Pass prune = 0 to keep everything.
func Product(a, b *Discrete, prune float64, upper bool) *Discrete {
	aFin, bFin := total(a.Mass), total(b.Mass)
	out := &Discrete{InfMass: a.InfMass*(b.InfMass+bFin) + aFin*b.InfMass}
	if len(a.Loss) == 0 || len(b.Loss) == 0 {
		return out
	}
	type atom struct{ l, m float64 }
	atoms := make([]atom, 0, len(a.Loss)*len(b.Loss))
	pruned := 0.0
	for i, la := range a.Loss {
		for j, lb := range b.Loss {
			m := a.Mass[i] * b.Mass[j]
			if m < prune {
				pruned += m
				continue
			}
			atoms = append(atoms, atom{la + lb, m})
		}
	}
	top := a.MaxLoss() + b.MaxLoss()
	if upper && pruned > 0 {
		atoms = append(atoms, atom{top, pruned})
	}
	sort.Slice(atoms, func(i, j int) bool { return atoms[i].l < atoms[j].l })
	for _, at := range atoms {
		if n := len(out.Loss); n > 0 && out.Loss[n-1] == at.l {
			out.Mass[n-1] += at.m
			continue
		}
		out.Loss = append(out.Loss, at.l)
		out.Mass = append(out.Mass, at.m)
	}
	return out
}

func total(m []float64) float64 {
	s := 0.0
	for _, v := range m {
		s += v
	}
	return s
}
