package sensitivity

import (
	"errors"
	"math"
	"testing"

	"github.com/dpkit/dpkit"
)

// multisets calls f with every multiset of size in [minSize, maxSize] over vals.
func multisets(vals []float64, minSize, maxSize int, f func([]float64)) {
	var rec func(start int, cur []float64)
	rec = func(start int, cur []float64) {
		if len(cur) >= minSize {
			f(cur)
		}
		if len(cur) == maxSize {
			return
		}
		for i := start; i < len(vals); i++ {
			rec(i, append(cur, vals[i]))
		}
	}
	rec(0, nil)
}

func grid(lo, hi float64) []float64 {
	var v []float64
	for x := lo; x <= hi; x++ {
		v = append(v, x)
	}
	return v
}

func sum(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}

// TestSumBruteForce compares Sum with the largest change of a sum found by enumerating
// every unit contribution (1..m rows on the integer grid of [lo, hi]; extreme points of
// the sum lie on the grid's ends, so the grid maximum is the exact maximum). Tolerance:
// exact (integers).
func TestSumBruteForce(t *testing.T) {
	for _, b := range [][2]float64{{-1, 3}, {2, 5}, {-4, -1}, {-2, 2}, {0, 1}} {
		for m := 1; m <= 3; m++ {
			var contrib []float64 // sums of one unit's rows
			multisets(grid(b[0], b[1]), 1, m, func(r []float64) { contrib = append(contrib, sum(r)) })
			wantAR, wantR1 := 0.0, 0.0
			for _, a := range contrib {
				wantAR = max(wantAR, math.Abs(a))
				for _, c := range contrib {
					wantR1 = max(wantR1, math.Abs(a-c))
				}
			}
			for nb, want := range map[Neighbour]float64{AddRemove: wantAR, ReplaceOne: wantR1} {
				got, err := Sum(nb, b[0], b[1], m)
				if err != nil || got != want {
					t.Errorf("Sum(%v, %v, %v, %d) = %v, %v; want %v", nb, b[0], b[1], m, got, err, want)
				}
			}
		}
	}
}

// TestMeanBruteForce checks that Mean is an upper bound on the change of the mean over
// every pair of neighbours built from small integer datasets, and is attained (to 1e-15
// relative) — so it is neither unsafe nor loose.
func TestMeanBruteForce(t *testing.T) {
	lo, hi := -1.0, 2.0
	vals := grid(lo, hi)
	for m := 1; m <= 2; m++ {
		for minRows := 1; minRows <= 4; minRows++ {
			var worstAR, worstR1 float64
			multisets(vals, 0, 4, func(c []float64) {
				common := append([]float64(nil), c...)
				multisets(vals, 1, m, func(a []float64) {
					da := append(append([]float64(nil), common...), a...)
					if len(common) >= minRows {
						worstAR = max(worstAR, math.Abs(sum(da)/float64(len(da))-sum(common)/float64(len(common))))
					}
					if len(da) < minRows {
						return
					}
					multisets(vals, 1, m, func(b []float64) {
						db := append(append([]float64(nil), common...), b...)
						if len(db) >= minRows {
							worstR1 = max(worstR1, math.Abs(sum(da)/float64(len(da))-sum(db)/float64(len(db))))
						}
					})
				})
			})
			for nb, worst := range map[Neighbour]float64{AddRemove: worstAR, ReplaceOne: worstR1} {
				got, err := Mean(nb, lo, hi, m, minRows)
				if err != nil {
					t.Fatal(err)
				}
				if got < worst || got > worst*(1+1e-15) {
					t.Errorf("Mean(%v, m=%d, minRows=%d) = %v, brute force %v", nb, m, minRows, got, worst)
				}
			}
		}
	}
}

// TestHistogramBruteForce enumerates one unit's rows (≤ m rows over 3 bins) and the
// change of the count vector; ℓ2 is compared with the exact root to one ulp.
func TestHistogramBruteForce(t *testing.T) {
	for m := 1; m <= 3; m++ {
		var vecs [][3]float64
		multisets([]float64{0, 1, 2}, 0, m, func(r []float64) {
			var v [3]float64
			for _, b := range r {
				v[int(b)]++
			}
			vecs = append(vecs, v)
		})
		var ar1, ar2, r11, r12 float64
		for _, a := range vecs {
			ar1 = max(ar1, a[0]+a[1]+a[2])
			ar2 = max(ar2, math.Sqrt(a[0]*a[0]+a[1]*a[1]+a[2]*a[2]))
			for _, b := range vecs {
				l1, l2sq := 0.0, 0.0
				for i := range a {
					l1 += math.Abs(a[i] - b[i])
					l2sq += (a[i] - b[i]) * (a[i] - b[i])
				}
				r11, r12 = max(r11, l1), max(r12, math.Sqrt(l2sq))
			}
		}
		l1, l2, err := Histogram(AddRemove, m)
		if err != nil || l1 != ar1 || l2 != ar2 {
			t.Errorf("Histogram(AddRemove, %d) = %v, %v, %v; want %v, %v", m, l1, l2, err, ar1, ar2)
		}
		l1, l2, err = Histogram(ReplaceOne, m)
		if err != nil || l1 != r11 || l2 < r12*(1-1e-16) || l2 > r12*(1+3e-16) || l2*l2 < 2*float64(m*m) {
			t.Errorf("Histogram(ReplaceOne, %d) = %v, %v, %v; want %v, %v", m, l1, l2, err, r11, r12)
		}
	}
}

func TestCount(t *testing.T) {
	for _, nb := range []Neighbour{AddRemove, ReplaceOne} {
		if c, err := Count(nb, 7); c != 7 || err != nil {
			t.Errorf("Count(%v, 7) = %v, %v", nb, c, err)
		}
	}
}

// TestRoundingUp: sums that are not representable are rounded up, never to nearest.
func TestRoundingUp(t *testing.T) {
	// 3 · 0.1: exact value 0.3000000000000000166533453693773481063544750213623046875
	// (0.1 as float64 times 3); the nearest float64 is below it.
	got, err := Sum(AddRemove, 0, 0.1, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got != math.Nextafter(0.30000000000000004, 1) && got != 0.30000000000000004 {
		t.Errorf("Sum = %v", got)
	}
	if got < 3*0.1 {
		t.Errorf("Sum = %v below 3·0.1 rounded", got)
	}
	// ReplaceOne, m = 1: hi − lo with an inexact difference: 1 − (−1e-17) rounds to 1
	// (below the exact value), so the result must be the next float64 above 1.
	got, _ = Sum(ReplaceOne, -1e-17, 1, 1)
	if got != math.Nextafter(1, 2) {
		t.Errorf("Sum(ReplaceOne, -1e-17, 1) = %v, want nextafter(1)", got)
	}
}

func TestInvalid(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		name string
		err  error
	}{
		{"neighbour", func() error { _, err := Count(Neighbour(5), 1); return err }()},
		{"maxRows", func() error { _, err := Count(AddRemove, 0); return err }()},
		{"lo", func() error { _, err := Sum(AddRemove, nan, 1, 1); return err }()},
		{"hi", func() error { _, err := Sum(AddRemove, 0, inf, 1); return err }()},
		{"hi", func() error { _, err := Sum(AddRemove, 1, 1, 1); return err }()},
		{"hi", func() error { _, err := Sum(AddRemove, -math.MaxFloat64, math.MaxFloat64, 2); return err }()},
		{"minRows", func() error { _, err := Mean(ReplaceOne, 0, 1, 1, 0); return err }()},
		{"maxRows", func() error { _, _, err := Histogram(ReplaceOne, -1); return err }()},
	}
	for _, c := range cases {
		var pe *dpkit.ParamError
		if !errors.As(c.err, &pe) || pe.Name != c.name {
			t.Errorf("want ParamError on %s, got %v", c.name, c.err)
		}
	}
	if AddRemove.String() != "add-remove" || ReplaceOne.String() != "replace-one" {
		t.Error("Neighbour.String")
	}
}

// TestGroupedBruteForce: Grouped against the definition, by enumeration of every
// contribution of one unit (c_j ≤ c rows in each of at most g of 4 groups, Σ c_j ≤ m)
// for counts and for sums of values in {−2, …, 2} (scale 2): AddRemove is attained
// exactly; ReplaceOne (remove one contribution, add another) never exceeds it.
func TestGroupedBruteForce(t *testing.T) {
	const groups = 4
	for m := 1; m <= 5; m++ {
		for g := 1; g <= 4; g++ {
			for c := 1; c <= m; c++ {
				var vecs [][groups]int
				var rec func(j, left, used int, v [groups]int)
				rec = func(j, left, used int, v [groups]int) {
					if j == groups {
						vecs = append(vecs, v)
						return
					}
					for x := 0; x <= min(c, left); x++ {
						if x > 0 && used == g {
							break
						}
						v[j] = x
						u := used
						if x > 0 {
							u++
						}
						rec(j+1, left-x, u, v)
					}
				}
				rec(0, m, 0, [groups]int{})
				norms := func(d [groups]float64) (float64, float64) {
					var l1, l2 float64
					for _, x := range d {
						l1 += math.Abs(x)
						l2 += x * x
					}
					return l1, math.Sqrt(l2)
				}
				var ar1, ar2, rp1, rp2 float64
				for _, u := range vecs {
					var d [groups]float64
					for j := range d {
						d[j] = float64(u[j])
					}
					a1, a2 := norms(d)
					ar1, ar2 = max(ar1, a1), max(ar2, a2)
					for _, v := range vecs {
						for j := range d {
							d[j] = float64(v[j] - u[j])
						}
						r1, r2 := norms(d)
						rp1, rp2 = max(rp1, r1), max(rp2, r2)
					}
				}
				l1, l2, err := Grouped(AddRemove, m, g, c, 1, true)
				if err != nil {
					t.Fatal(err)
				}
				// At most groups (4) groups exist here: the formula with g' = min(g, 4) is attained.
				if l1 != ar1 || math.Abs(l2-ar2) > 1e-12*ar2 {
					t.Errorf("m=%d g=%d c=%d AddRemove counts: (%v, %v), enumeration (%v, %v)", m, g, c, l1, l2, ar1, ar2)
				}
				r1, r2, _ := Grouped(ReplaceOne, m, g, c, 1, true)
				if r1 < rp1 || r2 < rp2*(1-1e-15) {
					t.Errorf("m=%d g=%d c=%d ReplaceOne counts: (%v, %v) below the enumeration (%v, %v)", m, g, c, r1, r2, rp1, rp2)
				}
				s1, s2, _ := Grouped(AddRemove, m, g, c, 2, false)
				if s1 != 2*ar1 || math.Abs(s2-2*ar2) > 1e-12*ar2 {
					t.Errorf("m=%d g=%d c=%d AddRemove sums: (%v, %v), want (%v, %v)", m, g, c, s1, s2, 2*ar1, 2*ar2)
				}
			}
		}
	}
	// Nothing declared (g = c = m): the histogram's sensitivities.
	for _, nb := range []Neighbour{AddRemove, ReplaceOne} {
		h1, h2, _ := Histogram(nb, 7)
		g1, g2, _ := Grouped(nb, 7, 7, 7, 1, true)
		if h1 != g1 || h2 != g2 {
			t.Errorf("%v: Grouped (%v, %v), Histogram (%v, %v)", nb, g1, g2, h1, h2)
		}
	}
}
