package noise

import (
	"errors"
	"math"
	"testing"

	"github.com/dpkit/dpkit"
)

// l1BallCount returns #{z ∈ ℤ² : ‖z‖₁ < x} = 2x² − 2x + 1 (x ≥ 1), 0 for x = 0.
func l1BallCount(x float64) float64 {
	if x == 0 {
		return 0
	}
	return 2*x*x - 2*x + 1
}

// TestStaircaseL1Norms: χ² of the ℓ1 norm of the two-dimensional staircase noise,
// binned by (period j, step) for j < 3 and a pooled tail, against the exact weights
// h(step)·#{z : ‖z‖₁ in the step} from the definition P(z) ∝ h(‖z‖₁) (not from the
// sampler's central/block split). False-rejection probability frp/2 per case.
func TestStaircaseL1Norms(t *testing.T) {
	src := Seeded(21)
	for _, c := range [][2]float64{{1, 0.6671}, {3, 0.25}, {12, 1e-3}} {
		s, err := NewStaircaseL1(c[0], 1, c[1], 2)
		if err != nil {
			t.Fatal(err)
		}
		m, r := float64(s.m), float64(s.r)
		b := math.Exp(-s.Epsilon())
		// total weight: Σ_j b^j [N(jM + r) − N(jM)] + b^(j+1) [N((j+1)M) − N(jM + r)], summed
		// far enough that b^j is negligible
		var p []float64
		total := 0.0
		for j := 0; j < 4000 && math.Pow(b, float64(j)) > 1e-30; j++ {
			bj, lo := math.Pow(b, float64(j)), float64(j)*m
			total += bj*(l1BallCount(lo+r)-l1BallCount(lo)) + bj*b*(l1BallCount(lo+m)-l1BallCount(lo+r))
		}
		const periods = 3
		tail := 1.0
		for j := range periods {
			bj, lo := math.Pow(b, float64(j)), float64(j)*m
			for _, v := range []float64{bj * (l1BallCount(lo+r) - l1BallCount(lo)), bj * b * (l1BallCount(lo+m) - l1BallCount(lo+r))} {
				p = append(p, v/total)
				tail -= v / total
			}
		}
		p = append(p, tail)
		// pool bins that expect fewer than 5 draws into the tail
		n := draws(200000, 20000)
		keep := p[:0:0]
		pooled := 0.0
		var index []int
		for i, v := range p {
			if v*float64(n) < 20 || i == len(p)-1 {
				pooled += v
				index = append(index, -1)
				continue
			}
			index = append(index, len(keep))
			keep = append(keep, v)
		}
		keep = append(keep, pooled)
		counts := make([]int, len(keep))
		for range n {
			z := s.sample(src)
			norm := uint64(max(z[0], -z[0]) + max(z[1], -z[1]))
			bin := len(p) - 1
			if j := norm / s.m; j < periods {
				bin = 2 * int(j)
				if norm%s.m >= s.r {
					bin++
				}
			}
			if index[bin] < 0 {
				counts[len(keep)-1]++
			} else {
				counts[index[bin]]++
			}
		}
		if pooled*float64(n) < 5 {
			if counts[len(keep)-1] > 0 && pooled*float64(n) < 1e-6 {
				t.Errorf("ε = %g: %d draws in bins of total probability %g", c[0], counts[len(keep)-1], pooled)
			}
			keep, counts = keep[:len(keep)-1], counts[:len(counts)-1]
		}
		chiSquare(t, "StaircaseL1 norms", counts, keep, frp/2)
	}
}

// TestStaircaseL1Directions: given the norm, the point is uniform on the ℓ1 sphere — χ²
// over (quadrant, first or second half of the quadrant's points), 8 equal bins, for
// non-zero draws. False-rejection probability frp.
func TestStaircaseL1Directions(t *testing.T) {
	s, err := NewStaircaseL1(2, 1, 0.4, 2)
	if err != nil {
		t.Fatal(err)
	}
	src := Seeded(22)
	counts := make([]int, 8)
	for range draws(80000, 16000) {
		z := s.sample(src)
		x, y := z[0], z[1]
		if x == 0 && y == 0 {
			continue
		}
		q := 0
		for !(x > 0 && y >= 0) { // turn back into the first quadrant
			x, y = y, -x
			q++
		}
		half := 0
		if 2*y >= x+y { // i ≥ n/2
			half = 1
		}
		counts[2*q+half]++
	}
	p := make([]float64, 8)
	for i := range p {
		p[i] = 1.0 / 8
	}
	chiSquare(t, "StaircaseL1 directions", counts, p, frp)
}

// TestStaircaseL1Privacy: the grid period covers the snapped ℓ1 sensitivity — for
// pairs of inputs at ℓ1 distance exactly Δ (all splits of Δ between the coordinates,
// at grid-unaligned offsets), the snapped difference is at most M grid steps.
func TestStaircaseL1Privacy(t *testing.T) {
	for _, delta := range []float64{1, 3.7, 1e-9, 6e12} {
		s, err := NewStaircaseL1(1, delta, 0.5, 2)
		if err != nil {
			t.Fatal(err)
		}
		g := s.Granularity()
		for _, split := range []float64{0, 0.5, 0.3333, 0.999, 1} {
			for _, off := range []float64{0, 0.5, 0.49999, 0.123} {
				x0, y0 := off*g, -off*g
				x1, y1 := x0+split*delta, y0-(1-split)*delta
				d := abs64(snap(x1, s.k)-snap(x0, s.k)) + abs64(snap(y1, s.k)-snap(y0, s.k))
				if uint64(d) > s.m {
					t.Errorf("Δ = %g split %g offset %g: snapped distance %d > M = %d", delta, split, off, d, s.m)
				}
			}
		}
	}
}

func abs64(x int64) int64 { return max(x, -x) }

// TestStaircaseL1Extremes: large ε returns promptly, inside the central ball once
// P(z ≠ 0) = (α/u + β/u²)/(1 + …) ≈ 2M²/e^ε is negligible (< 2e-11 from ε = 70; at ε = 45
// with γ = 0 it is about ½, the first shell holding ≈ 2M² points); bad input is refused
// with the parameter's name.
func TestStaircaseL1Extremes(t *testing.T) {
	s45, err := NewStaircaseL1(45, 1, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	for range 200 {
		s45.sample(Seeded(45))
	}
	for _, eps := range []float64{70, 700, MaxRate} {
		s, err := NewStaircaseL1(eps, 1, 0, 2)
		if err != nil {
			t.Fatal(err)
		}
		src := Seeded(uint64(eps))
		for range 200 {
			if z := s.sample(src); z != [2]int64{} {
				t.Fatalf("ε = %g: draw %v, want 0 (r = 1, P(z ≠ 0) < 1e-9)", eps, z)
			}
		}
	}
	for _, c := range []struct {
		eps, delta, gamma float64
		dims              int
		name              string
	}{{1, 1, 0.5, 3, "dims"}, {0, 1, 0.5, 2, "epsilon"}, {1e-5, 1, 0.5, 2, "epsilon"}, {1, math.Inf(1), 0.5, 2, "sensitivity"}, {1, 1, 1.5, 2, "gamma"}, {1, 1, math.NaN(), 2, "gamma"}} {
		_, err := NewStaircaseL1(c.eps, c.delta, c.gamma, c.dims)
		if err == nil || !containsName(err, c.name) {
			t.Errorf("NewStaircaseL1(%g, %g, %g, %d) = %v, want an error naming %s", c.eps, c.delta, c.gamma, c.dims, err, c.name)
		}
	}
}

func containsName(err error, name string) bool {
	var pe *dpkit.ParamError
	return errors.As(err, &pe) && pe.Name == name
}

// BenchmarkStaircaseL1: one secure two-dimensional staircase release at ε = 1.
func BenchmarkStaircaseL1(b *testing.B) {
	s, _ := NewStaircaseL1(1, 1, 0.6670835615708486, 2)
	src := Secure()
	for b.Loop() {
		s.Add(src, [2]float64{3, 4})
	}
}

// BenchmarkStaircaseLargeEpsilon: the one-dimensional staircase at ε = 30 with its
// ℓ1-optimal γ ≈ 3e-7 (r ≈ 1300 of M ≈ 2^32): the old rejection sampler needed ≈ 1/(γ + b)
// ≈ 3e6 rounds a draw here.
func BenchmarkStaircaseLargeEpsilon(b *testing.B) {
	s, _ := NewStaircase(30, 1, StaircaseGammaL1(30))
	src := Secure()
	for b.Loop() {
		s.Add(src, 3)
	}
}
