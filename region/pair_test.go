package region

import (
	"math"
	"slices"
	"testing"
)

// The reference pairs of these tests, with every value derived by hand.
//
// Randomized response at ε = ln 3: P0 = (3/4, 1/4), P1 = (1/4, 3/4), ratios 3 and 1/3.
//
//	d_ε(P0‖P1) = (3/4 − e^ε/4)₊ + (1/4 − 3e^ε/4)₊
//	d_0 = 1/2, d_ln2 = 1/4, d_ln3 = 0, d_−ln3 = (3/4 − 1/12) + (1/4 − 1/4) = 2/3,
//	and d_ε(P1‖P0) = d_ε(P0‖P1) by symmetry.
//
// An asymmetric pair: P0 = (0.6, 0.4, 0), P1 = (0.3, 0.5, 0.2), ratios 2, 0.8 and 0.
//
//	d_ε(P0‖P1) = (0.6 − 0.3 e^ε)₊ + (0.4 − 0.5 e^ε)₊
//	d_ε(P1‖P0) = 0.2 + (0.5 − 0.4 e^ε)₊ + (0.3 − 0.6 e^ε)₊
var (
	rrP0, rrP1     = []float64{0.75, 0.25}, []float64{0.25, 0.75}
	asymP0, asymP1 = []float64{0.6, 0.4, 0}, []float64{0.3, 0.5, 0.2}
)

func TestNewPairErrors(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		p0, p1 []float64
		name   string
	}{
		{nil, nil, "len(p0)"},
		{[]float64{}, []float64{1}, "len(p0)"},
		{[]float64{1}, []float64{0.5, 0.5}, "len(p1)"},
		{[]float64{0.5, nan}, []float64{0.5, 0.5}, "p0[1]"},
		{[]float64{0.5, 0.5}, []float64{inf, 0.5}, "p1[0]"},
		{[]float64{1.5, -0.5}, []float64{0.5, 0.5}, "p0[1]"},
		{[]float64{0.5, 0.5}, []float64{0.5, -0.0001}, "p1[1]"},
		{[]float64{0.5, 0.4}, []float64{0.5, 0.5}, "sum(p0)"},
		{[]float64{0.5, 0.5}, []float64{0.5, 0.5 + 2e-9}, "sum(p1)"},
		{[]float64{1e308, 1e308}, []float64{0.5, 0.5}, "sum(p0)"}, // the sum overflows
	}
	for _, c := range cases {
		_, err := NewPair(c.p0, c.p1)
		wantParamError(t, err, c.name)
	}
	// Within the tolerance: accepted as given.
	if _, err := NewPair([]float64{0.5, 0.5 + 5e-10}, []float64{1, 0}); err != nil {
		t.Errorf("sum 1 + 5e-10: unexpected error %v", err)
	}
}

func TestNewPairCopies(t *testing.T) {
	p0, p1 := []float64{0.75, 0.25}, []float64{0.25, 0.75}
	p := mustPair(t, p0, p1)
	p0[0], p1[0] = 9, 9
	if p.P0[0] != 0.75 || p.P1[0] != 0.25 {
		t.Errorf("NewPair shares its input slices: %v", p)
	}
}

func TestHockeyStickReference(t *testing.T) {
	ln2, ln3, inf := math.Log(2), math.Log(3), math.Inf(1)
	rr := mustPair(t, rrP0, rrP1)
	asym := mustPair(t, asymP0, asymP1)
	cases := []struct {
		p            *Pair
		eps          float64
		fwd, reverse float64 // hand-derived, see the comment on rrP0 and asymP0
	}{
		{rr, 0, 0.5, 0.5},
		{rr, ln2, 0.25, 0.25},
		{rr, ln3, 0, 0},
		{rr, 5, 0, 0},
		{rr, -ln3, 2.0 / 3, 2.0 / 3},
		{rr, inf, 0, 0},
		{rr, -inf, 1, 1},
		{asym, 0, 0.3, 0.3},                           // total variation, both directions
		{asym, math.Log(1.5), 0.15, 0.2},              // 0.6 − 0.45;  0.2 + (0.5 − 0.6)₊
		{asym, math.Log(1.1), 0.27, 0.26},             // 0.6 − 0.33;  0.2 + 0.5 − 0.44
		{asym, math.Log(1.25), 0.225, 0.2},            // 0.6 − 0.375; 0.2 + 0
		{asym, ln2, 0, 0.2},                           // the ratio-2 outcome ties
		{asym, inf, 0, 0.2},                           // P1({P0 = 0}) = 0.2
		{asym, math.Log(0.5), 0.45 + 0.15, 0.2 + 0.3}, // 0.6−0.15 + 0.4−0.25;  0.2 + 0.5−0.2 + 0.3−0.3
	}
	for _, c := range cases {
		if got := c.p.HockeyStick(c.eps); !near(got, c.fwd, 1e-15) && math.Abs(got-c.fwd) > 1e-16 {
			t.Errorf("%v.HockeyStick(%g) = %.17g, want %g", c.p, c.eps, got, c.fwd)
		}
		if got := c.p.HockeyStickReverse(c.eps); !near(got, c.reverse, 1e-15) && math.Abs(got-c.reverse) > 1e-16 {
			t.Errorf("%v.HockeyStickReverse(%g) = %.17g, want %g", c.p, c.eps, got, c.reverse)
		}
	}
}

// At ε = 710, e^ε overflows float64 but the term of an outcome with P1 = 1e-320 is still
// positive: 0.5 − e^710·1e-320 ≈ 0.5 − 2.2e-12. The reference is the same term computed
// as 0.5 − exp(710 + ln P1) (independent of the expm1 form the package uses).
func TestHockeyStickOverflow(t *testing.T) {
	q := 1e-320 // subnormal
	p := mustPair(t, []float64{0.5, 0.5}, []float64{q, 1 - q})
	// math.Log is wrong for subnormals on amd64 (golang/go#56600), so scale q first.
	want := 0.5 - math.Exp(710+math.Log(q*0x1p54)-54*math.Ln2)
	if got := p.HockeyStick(710); !near(got, want, 1e-12) {
		t.Errorf("HockeyStick(710) = %.17g, want %.17g", got, want)
	}
	if got := p.HockeyStick(760); got != 0 { // e^760·1e-320 ≈ 1e10 > 0.5
		t.Errorf("HockeyStick(760) = %g, want 0", got)
	}
	// Reverse at ε = 0: (q − 0.5)₊ + (1 − q − 0.5)₊ = 0.5 − q.
	if got := p.HockeyStickReverse(0); !near(got, 0.5-q, 1e-15) {
		t.Errorf("HockeyStickReverse(0) = %g, want %g", got, 0.5-q)
	}
}

func TestHockeyStickInvalid(t *testing.T) {
	rr := mustPair(t, rrP0, rrP1)
	if got := rr.HockeyStick(math.NaN()); !math.IsNaN(got) {
		t.Errorf("HockeyStick(NaN) = %g, want NaN", got)
	}
	bad := []*Pair{nil, {}, {P0: []float64{1}, P1: []float64{0.5, 0.5}}, {P0: []float64{2}, P1: []float64{1}}}
	for _, p := range bad {
		if got := p.HockeyStick(1); !math.IsNaN(got) {
			t.Errorf("%v.HockeyStick(1) = %g, want NaN", p, got)
		}
		if got := p.HockeyStickReverse(1); !math.IsNaN(got) {
			t.Errorf("%v.HockeyStickReverse(1) = %g, want NaN", p, got)
		}
		if p.Region() != nil || p.Polygon() != nil || p.Breakpoints() != nil {
			t.Errorf("%v: Region, Polygon and Breakpoints must be nil", p)
		}
		if _, err := p.Epsilon(0.1); err == nil {
			t.Errorf("%v.Epsilon: want an error", p)
		}
	}
}

func TestEpsilonReference(t *testing.T) {
	rr := mustPair(t, rrP0, rrP1)
	asym := mustPair(t, asymP0, asymP1)
	cases := []struct {
		p     *Pair
		delta float64
		want  float64
		why   string
	}{
		{rr, 0, math.Log(3), "d_ε = 0 from the largest ratio on"},
		{rr, 0.25, math.Log(2), "3/4 − e^ε/4 = 1/4"},
		{rr, 0.3, math.Log(1.8), "3/4 − e^ε/4 = 0.3"},
		{rr, 0.5, 0, "d_0 = 1/2"},
		{rr, 1, 0, "δ ≥ 1"},
		{asym, 0.3, 0, "d_0 = 0.3 both ways"},
		{asym, 0.25, math.Log(7.0 / 6), "forward 0.6 − 0.3e^ε = 0.25 at 7/6; reverse 0.7 − 0.4e^ε = 0.25 at 9/8"},
		{asym, 0.2, math.Log(4.0 / 3), "forward 0.6 − 0.3e^ε = 0.2 at 4/3; reverse reaches 0.2 at 5/4"},
		{asym, 0.1, math.Inf(1), "reverse ≥ P1({P0 = 0}) = 0.2 at every ε"},
		{asym, 0.2 - 1e-17, math.Inf(1), "just below the point mass"},
		// δ equal to a point mass: P1({P0 = 0}) = 0.5 and d_0 = 0.5 both ways.
		{mustPair(t, []float64{0, 1, 0, 0, 0}, []float64{0, 0.5, 0, 0.25, 0.25}), 0.5, 0, "d_0 = δ = point mass"},
		// Huge ratio 0.5/1e-300: d(P0‖P1) = (0.5 − e^ε 1e-300)₊ vanishes at ε = ln(5e299).
		{mustPair(t, []float64{0.5, 0.5}, []float64{1e-300, 1 - 1e-300}), 0, math.Log(0.5) - math.Log(1e-300), "ln(0.5/1e-300)"},
	}
	for _, c := range cases {
		got, err := c.p.Epsilon(c.delta)
		if err != nil {
			t.Fatalf("Epsilon(%g): %v", c.delta, err)
		}
		// Epsilon rounds up by a few units in the last place of e^ε, never down: an
		// absolute error in ε is a relative error in e^ε.
		if math.Abs(got-c.want) > 1e-14*max(1, c.want) || got < c.want-1e-16*c.want {
			t.Errorf("%v.Epsilon(%g) = %.17g, want %.17g (%s)", c.p, c.delta, got, c.want, c.why)
		}
	}
	for _, d := range []float64{math.NaN(), -0.1, 1.5} {
		_, err := rr.Epsilon(d)
		wantParamError(t, err, "delta")
	}
}

// KOV Remark 6.1 (k = 2, 3): the k-fold product of randomized response at ε = ln 3 has
// breakpoints ε_i = (k − 2i)ε with δ_i from eq. (6), evaluated by hand:
//
//	k = 2: δ(2ε) = 0, δ(0) = (e^2ε − 1)/(1+e^ε)^2 = 8/16 = 1/2
//	k = 3: δ(3ε) = 0, δ(ε) = (e^3ε − e^ε)/(1+e^ε)^3 = 24/64 = 3/8
//
// So Epsilon(1/2) = 0 and Epsilon(3/8) = ln 3, and between breakpoints the curve is
// linear in e^ε: for k = 2, d_ε = 9/16 − e^ε/16 on [0, 2 ln 3], so Epsilon(1/4) = ln 5.
func TestEpsilonProducts(t *testing.T) {
	rr2 := mustPair(t, []float64{9.0 / 16, 3.0 / 16, 3.0 / 16, 1.0 / 16}, []float64{1.0 / 16, 3.0 / 16, 3.0 / 16, 9.0 / 16})
	rr3 := mustPair(t,
		[]float64{27.0 / 64, 9.0 / 64, 9.0 / 64, 9.0 / 64, 3.0 / 64, 3.0 / 64, 3.0 / 64, 1.0 / 64},
		[]float64{1.0 / 64, 3.0 / 64, 3.0 / 64, 3.0 / 64, 9.0 / 64, 9.0 / 64, 9.0 / 64, 27.0 / 64})
	cases := []struct {
		p           *Pair
		delta, want float64
	}{
		{rr2, 0.5, 0},
		{rr2, 0.25, math.Log(5)},
		{rr2, 0, 2 * math.Log(3)},
		{rr3, 3.0 / 8, math.Log(3)},
		{rr3, 0, 3 * math.Log(3)},
	}
	for _, c := range cases {
		got, err := c.p.Epsilon(c.delta)
		if err != nil || math.Abs(got-c.want) > 1e-14*max(1, c.want) {
			t.Errorf("Epsilon(%g) = %.17g, %v; want %.17g", c.delta, got, err, c.want)
		}
	}
}

func TestLLRAccuracy(t *testing.T) {
	// ln(p/q) for p/q = 1 + 2^-40: the reference is the series x − x²/2 + x³/3,
	// x = 2^-40, whose next term is below 1e-48.
	x := 0x1p-40
	want := x - x*x/2 + x*x*x/3
	if got := llr(0.5*(1+x), 0.5); !near(got, want, 1e-15) {
		t.Errorf("llr near 1 = %.17g, want %.17g", got, want)
	}
	// Overflowing ratio: the reference ln(1/q) = −(ln(q·2^54) − 54 ln 2) scales the
	// subnormal q = 1e-320 into the normal range, where math.Log is exact to an ulp.
	q := 1e-320
	if got, want := llr(1, q), -(math.Log(q*0x1p54) - 54*math.Ln2); !near(got, want, 1e-15) {
		t.Errorf("llr(1, 1e-320) = %.17g, want %.17g", got, want)
	}
	if !math.IsInf(llr(1, 0), 1) || !math.IsInf(llr(0, 1), -1) {
		t.Error("llr must be ±Inf when one side is 0")
	}
}

func TestGroupsMergesTies(t *testing.T) {
	// Ratios 2, 2, 0.5, +Inf and 0 (L = −Inf).
	gs := groups([]float64{0.2, 0.4, 0.1, 0.3, 0}, []float64{0.1, 0.2, 0.2, 0, 0.5})
	var ls []float64
	for _, g := range gs {
		ls = append(ls, g.l)
	}
	want := []float64{math.Inf(1), math.Log(2), math.Log(0.5), math.Inf(-1)}
	if !slices.Equal(ls, want) {
		t.Fatalf("ratios %v, want %v", ls, want)
	}
	if !near(gs[1].p0, 0.6, 1e-15) || !near(gs[1].p1, 0.3, 1e-15) {
		t.Errorf("merged group %+v, want p0 = 0.6, p1 = 0.3", gs[1])
	}
}
