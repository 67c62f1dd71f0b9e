package numeric

// Sum is a Neumaier (improved Kahan–Babuška) compensated accumulator. For n non-negative
// terms each carrying relative error ≤ r, the result has relative error ≤ r + 2u + O(n u²),
// u = 2⁻⁵³, independent of the order of summation.
type Sum struct {
	s, c float64
}

// Add adds x to the sum.
func (a *Sum) Add(x float64) {
	t := a.s + x
	if abs(a.s) >= abs(x) {
		a.c += (a.s - t) + x
	} else {
		a.c += (x - t) + a.s
	}
	a.s = t
}

// Value returns the compensated sum.
func (a *Sum) Value() float64 { return a.s + a.c }

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
