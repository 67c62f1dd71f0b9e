package pld

// Product returns the distribution of the sum of independent losses from a and b (the
// privacy-loss distribution of the composition), by direct enumeration of the atom
// pairs: exact up to one rounding per sum and product.
//
// Atoms whose mass is below prune are not kept: with upper = true their mass moves to
// the largest loss of the product (so δ(ε) can only rise), with upper = false it is
// dropped (so δ(ε) can only fall). Pass prune = 0 to keep everything.
//
// The sums are produced in order by a k-way merge of the sorted sequences
// a.Loss[i] + b.Loss[j] (one per atom of the smaller input; a rounded sum is monotone in
// each term), so the cost is O(n·log k) for n = len(a)·len(b) pairs, without sorting.
func Product(a, b *Discrete, prune float64, upper bool) *Discrete {
	aFin, bFin := total(a.Mass), total(b.Mass)
	out := &Discrete{InfMass: a.InfMass*(b.InfMass+bFin) + aFin*b.InfMass}
	if len(a.Loss) == 0 || len(b.Loss) == 0 {
		return out
	}
	if len(b.Loss) > len(a.Loss) {
		a, b = b, a
	}
	top := a.MaxLoss() + b.MaxLoss()
	// Stream j yields a.Loss[i] + b.Loss[j] for i = next[j], next[j]+1, …; h is a binary
	// min-heap of the live streams keyed by their next sum.
	next := make([]int, len(b.Loss))
	key := func(j int) float64 { return a.Loss[next[j]] + b.Loss[j] }
	h := make([]int, len(b.Loss))
	for j := range h {
		h[j] = j
	}
	down := func(i int) {
		for {
			c := 2*i + 1
			if c >= len(h) {
				return
			}
			if c+1 < len(h) && key(h[c+1]) < key(h[c]) {
				c++
			}
			if key(h[i]) <= key(h[c]) {
				return
			}
			h[i], h[c] = h[c], h[i]
			i = c
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		down(i)
	}
	n := len(a.Loss) * len(b.Loss)
	out.Loss = make([]float64, 0, n)
	out.Mass = make([]float64, 0, n)
	pruned := 0.0
	for len(h) > 0 {
		j := h[0]
		l, m := key(j), a.Mass[next[j]]*b.Mass[j]
		if next[j]++; next[j] == len(a.Loss) {
			h[0] = h[len(h)-1]
			h = h[:len(h)-1]
		}
		down(0)
		if m < prune {
			pruned += m
			continue
		}
		if k := len(out.Loss); k > 0 && out.Loss[k-1] == l {
			out.Mass[k-1] += m
			continue
		}
		out.Loss = append(out.Loss, l)
		out.Mass = append(out.Mass, m)
	}
	if upper && pruned > 0 {
		if k := len(out.Loss); k > 0 && out.Loss[k-1] == top {
			out.Mass[k-1] += pruned
		} else {
			out.Loss = append(out.Loss, top)
			out.Mass = append(out.Mass, pruned)
		}
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
