package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dpkit/dpkit/mechanism"
	"github.com/dpkit/dpkit/pld"
)

func numbers(t *testing.T, v map[string]any, key string) []float64 {
	t.Helper()
	arr, ok := v[key].([]any)
	if !ok {
		t.Fatalf("key %q = %#v, want an array", key, v[key])
	}
	out := make([]float64, len(arr))
	for i, x := range arr {
		f, err := x.(json.Number).Float64()
		if err != nil {
			t.Fatal(err)
		}
		out[i] = f
	}
	return out
}

// TestNoiseJSON: every kind prints the documented keys, values on the grid, the ci95
// around the first value, and the guarantee asked for. The releases are random, so the
// checks are on structure and on a loose bound: with 200 releases, the fraction outside
// the 95% interval is below 20% except with probability < 1e-30 (binomial tail).
func TestNoiseJSON(t *testing.T) {
	for _, c := range []struct {
		kind  string
		extra []string
		delta float64
	}{
		{"laplace", nil, 0},
		{"gaussian", []string{"--delta", "1e-6"}, 1e-6},
		{"geometric", nil, 0},
		{"staircase", nil, 0},
	} {
		args := append([]string{"noise", c.kind, "--value", "100", "--sensitivity", "2", "--eps", "0.5", "--n", "200", "--json"}, c.extra...)
		v := decodeJSON(t, mustSucceed(t, "", args...))
		if got, want := keysOf(v), "ci95,delta,epsilon,granularity,mechanism,scale,values"; got != want {
			t.Fatalf("%s: keys %s, want %s", c.kind, got, want)
		}
		if v["mechanism"] != c.kind || number(t, v, "epsilon") != 0.5 || number(t, v, "delta") != c.delta {
			t.Errorf("%s: mechanism/epsilon/delta = %v/%v/%v", c.kind, v["mechanism"], v["epsilon"], v["delta"])
		}
		vals := numbers(t, v, "values")
		ci := numbers(t, v, "ci95")
		g := number(t, v, "granularity")
		if len(vals) != 200 || len(ci) != 2 {
			t.Fatalf("%s: %d values, ci %v", c.kind, len(vals), ci)
		}
		if math.Abs((ci[0]+ci[1])/2-vals[0]) > 1e-9*math.Abs(vals[0]) {
			t.Errorf("%s: ci95 %v not centred on the first value %v", c.kind, ci, vals[0])
		}
		half := (ci[1] - ci[0]) / 2
		outside := 0
		for _, x := range vals {
			if q := x / g; q != math.Trunc(q) {
				t.Errorf("%s: value %v not a multiple of the granularity %v", c.kind, x, g)
			}
			if math.Abs(x-100) > half {
				outside++
			}
		}
		if outside > 40 {
			t.Errorf("%s: %d of 200 releases outside ±%v", c.kind, outside, half)
		}
		// The scale matches the calibration: Laplace b = Δ/ε = 4; geometric 1/rate = 4.
		if (c.kind == "laplace" || c.kind == "geometric") && math.Abs(number(t, v, "scale")-4) > 1e-9 {
			t.Errorf("%s: scale %v, want 4", c.kind, number(t, v, "scale"))
		}
	}
}

func TestNoiseText(t *testing.T) {
	out := mustSucceed(t, "", "noise", "laplace", "--value", "3", "--sensitivity", "1", "--eps", "1")
	for _, want := range []string{"mechanism", "laplace", "95% interval", "granularity", "(ε=1, δ=0) per release"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
}

func TestNoiseErrors(t *testing.T) {
	checkErrors(t, []errorCase{
		{name: "no kind", args: []string{"noise", "--value", "1", "--sensitivity", "1", "--eps", "1"}, code: exitUsage, want: []string{"missing KIND"}},
		{name: "bad kind", args: []string{"noise", "cauchy", "--value", "1", "--sensitivity", "1", "--eps", "1"}, code: exitUsage, want: []string{"unknown KIND"}},
		{name: "no value", args: []string{"noise", "laplace", "--sensitivity", "1", "--eps", "1"}, code: exitUsage, want: []string{"--value"}},
		{name: "nan value", args: []string{"noise", "laplace", "--value", "NaN", "--sensitivity", "1", "--eps", "1"}, code: exitUsage, want: []string{"--value"}},
		{name: "zero eps", args: []string{"noise", "laplace", "--value", "1", "--sensitivity", "1", "--eps", "0"}, code: exitUsage, want: []string{"--eps"}},
		{name: "neg sens", args: []string{"noise", "laplace", "--value", "1", "--sensitivity", "-1", "--eps", "1"}, code: exitUsage, want: []string{"--sensitivity"}},
		{name: "gauss no delta", args: []string{"noise", "gaussian", "--value", "1", "--sensitivity", "1", "--eps", "1"}, code: exitUsage, want: []string{"--delta"}},
		{name: "laplace delta", args: []string{"noise", "laplace", "--value", "1", "--sensitivity", "1", "--eps", "1", "--delta", "0.1"}, code: exitUsage, want: []string{"only to gaussian"}},
		{name: "geometric frac", args: []string{"noise", "geometric", "--value", "1.5", "--sensitivity", "1", "--eps", "1"}, code: exitUsage, want: []string{"integer"}},
		{name: "n too big", args: []string{"noise", "laplace", "--value", "1", "--sensitivity", "1", "--eps", "1", "--n", "0"}, code: exitUsage, want: []string{"--n"}},
	})
}

// TestNoiseStaircase2D: --dim 2 prints the documented keys; the expected ℓ1 error at
// ε = 1, Δ = 1 is the thesis's V* (1.98615327945839306… from
// mechanism/testdata/staircase_reference.json, 1e-6 relative for the grid's period
// Δ(1 + 2^−31)); with 200 releases the fraction beyond l1_radius95 is below 20% except
// with probability < 1e-30.
func TestNoiseStaircase2D(t *testing.T) {
	v := decodeJSON(t, mustSucceed(t, "", "noise", "staircase", "--dim", "2", "--value", "120,-37", "--sensitivity", "1", "--eps", "1", "--n", "200", "--json"))
	if got, want := keysOf(v), "delta,dimension,epsilon,expected_l1_error,gamma,granularity,l1_radius95,mechanism,scale,vectors"; got != want {
		t.Fatalf("keys %s, want %s", got, want)
	}
	if e := number(t, v, "expected_l1_error"); math.Abs(e/1.986153279458393-1) > 1e-6 {
		t.Errorf("expected_l1_error %v, want ≈ 1.9861533", e)
	}
	if g := number(t, v, "gamma"); math.Abs(g/0.6670835615708486-1) > 1e-6 {
		t.Errorf("gamma %v, want ≈ 0.66708356", g)
	}
	radius := number(t, v, "l1_radius95")
	vecs, ok := v["vectors"].([]any)
	if !ok || len(vecs) != 200 {
		t.Fatalf("vectors = %v", v["vectors"])
	}
	outside := 0
	for _, x := range vecs {
		pair := x.([]any)
		a, _ := pair[0].(json.Number).Float64()
		b, _ := pair[1].(json.Number).Float64()
		if math.Abs(a-120)+math.Abs(b+37) >= radius {
			outside++
		}
	}
	if outside > 40 {
		t.Errorf("%d of 200 releases beyond the 95%% ℓ1 radius %v", outside, radius)
	}
	out := mustSucceed(t, "", "noise", "staircase", "--dim", "2", "--value", "1,2", "--sensitivity", "1", "--eps", "3")
	for _, want := range []string{"two-dimensional", "95% ℓ1 radius", "expected ℓ1 error", "(ε=3, δ=0) per release"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	checkErrors(t, []errorCase{
		{name: "dim laplace", args: []string{"noise", "laplace", "--dim", "2", "--value", "1,2", "--sensitivity", "1", "--eps", "1"}, code: exitUsage, want: []string{"only to staircase"}},
		{name: "dim 3", args: []string{"noise", "staircase", "--dim", "3", "--value", "1,2,3", "--sensitivity", "1", "--eps", "1"}, code: exitUsage, want: []string{"--value"}},
		{name: "one coordinate", args: []string{"noise", "staircase", "--dim", "2", "--value", "1", "--sensitivity", "1", "--eps", "1"}, code: exitUsage, want: []string{"want 2 number(s)"}},
		{name: "two for dim 1", args: []string{"noise", "staircase", "--value", "1,2", "--sensitivity", "1", "--eps", "1"}, code: exitUsage, want: []string{"want 1 number(s)"}},
		{name: "nan coordinate", args: []string{"noise", "staircase", "--dim", "2", "--value", "1,NaN", "--sensitivity", "1", "--eps", "1"}, code: exitUsage, want: []string{"finite"}},
	})
}

// TestNoiseStaircaseLargeEpsilon is the regression test of issue 24's hang: `dpkit noise
// staircase --value 0 --sensitivity 1 --eps 70` returns (γM < ½ left the central step
// empty and the old sampler's rejection loop never accepted), in one and two dimensions
// and at the largest ε accepted.
func TestNoiseStaircaseLargeEpsilon(t *testing.T) {
	for _, args := range [][]string{
		{"noise", "staircase", "--value", "0", "--sensitivity", "1", "--eps", "70", "--json"},
		{"noise", "staircase", "--value", "0", "--sensitivity", "1", "--eps", "45", "--n", "100", "--json"},
		{"noise", "staircase", "--value", "0", "--sensitivity", "1", "--eps", "1048576", "--json"},
		{"noise", "staircase", "--dim", "2", "--value", "0,0", "--sensitivity", "1", "--eps", "70", "--json"},
	} {
		v := decodeJSON(t, mustSucceed(t, "", args...))
		if number(t, v, "epsilon") <= 0 {
			t.Errorf("%v: epsilon %v", args, v["epsilon"])
		}
	}
}

// TestComposeStaircase: `compose --mechanism staircase:…` composes the staircase by its
// exact privacy loss distribution. Ten releases at ε = 1, δ(1): 0.803881319080633678…
// (mechanism/testdata/staircase_reference.json: the continuous staircase with the
// variance-optimal γ, 60 digits; the grid's γ is within 2^−31 of it, so 1e-8 relative),
// below the 0.82117168484 of ten (1, 0) pairs (KOV Thm 3.3, the same command with --mech).
func TestComposeStaircase(t *testing.T) {
	v := decodeJSON(t, mustSucceed(t, "", "compose", "--mechanism", "staircase:eps=1,sensitivity=3,count=10", "--eps", "1", "--json"))
	if d := number(t, v, "delta"); math.Abs(d/0.803881319080633678-1) > 1e-8 {
		t.Errorf("δ(1) = %v, reference 0.803881319080634", d)
	}
	pairs := decodeJSON(t, mustSucceed(t, "", "compose", "--mech", "1,0,10", "--eps", "1", "--json"))
	if !(number(t, v, "delta") < number(t, pairs, "delta")) {
		t.Errorf("staircase δ %v not below the (1, 0) pairs' %v", v["delta"], pairs["delta"])
	}
	// The pairs' δ(1) by KOV Thm 3.3 summed here (docs/errata.md, KOV item 1):
	// Σ_m C(10,m) p^m (1−p)^(10−m) (1 − e^(1 − (2m−10)ε0))₊, p = e^ε0/(1+e^ε0).
	for _, c := range []struct {
		eps0 float64
		arg  string
	}{{1, "1,0,10"}, {0.5, "0.5,0,10"}} {
		p, want := 1/(1+math.Exp(-c.eps0)), 0.0
		binom := 1.0
		for m := 0; m <= 10; m++ {
			if m > 0 {
				binom = binom * float64(10-m+1) / float64(m)
			}
			want += binom * math.Pow(p, float64(m)) * math.Pow(1-p, float64(10-m)) * math.Max(0, 1-math.Exp(1-float64(2*m-10)*c.eps0))
		}
		got := number(t, decodeJSON(t, mustSucceed(t, "", "compose", "--mech", c.arg, "--eps", "1", "--json")), "delta")
		if !(got >= want*(1-1e-14) && got <= want*(1+1e-11)) { // compose rounds up
			t.Errorf("10 × (%g, 0): δ(1) = %v, Thm 3.3 %v", c.eps0, got, want)
		}
	}
	// docs/mechanisms.md: at ε = 0.5 the staircase's δ(1) is 0.331214817504500730… (reference)
	half := decodeJSON(t, mustSucceed(t, "", "compose", "--mechanism", "staircase:eps=0.5,count=10", "--eps", "1", "--json"))
	if d := number(t, half, "delta"); math.Abs(d/0.331214817504500730-1) > 1e-8 {
		t.Errorf("ε = 0.5: δ(1) = %v, reference 0.3312148175045", d)
	}
	// two dimensions: the grid's three-point pair (pld.StaircaseL1, checked there against
	// the enumerated distribution), composed 10 times: δ(1) summed over the trinomial
	// counts (i losses of +ε, j of −ε) here, below the (1, 0) pairs' value
	v2 := decodeJSON(t, mustSucceed(t, "", "compose", "--mechanism", "staircase:eps=1,dim=2,count=10", "--eps", "1", "--json"))
	m2, err := mechanism.NewStaircaseL1(mechanism.StaircaseL1Options{Epsilon: 1, Sensitivity: 1, Dimension: 2})
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := m2.PLD()
	lo, mid, hi := p2.(pld.StaircaseL1).Masses()
	want2, e2 := 0.0, p2.(pld.StaircaseL1).Epsilon
	for i := 0; i <= 10; i++ {
		for j := 0; i+j <= 10; j++ {
			ways := 1.0 // 10!/(i! j! (10−i−j)!)
			for f := 2; f <= 10; f++ {
				ways *= float64(f)
			}
			for _, n := range []int{i, j, 10 - i - j} {
				for f := 2; f <= n; f++ {
					ways /= float64(f)
				}
			}
			want2 += ways * math.Pow(hi, float64(i)) * math.Pow(lo, float64(j)) * math.Pow(mid, float64(10-i-j)) * math.Max(0, 1-math.Exp(1-float64(i-j)*e2))
		}
	}
	if d, p := number(t, v2, "delta"), number(t, pairs, "delta"); !(d >= want2*(1-1e-9) && d <= want2*(1+1e-6)) || !(d < p) {
		t.Errorf("dim=2: δ %v, trinomial sum %v, the (1, 0) pairs' %v", d, want2, p)
	}
	checkErrors(t, []errorCase{
		{name: "no eps", args: []string{"compose", "--mechanism", "staircase:sensitivity=1", "--eps", "1"}, code: exitUsage, want: []string{"missing eps"}},
		{name: "eps range", args: []string{"compose", "--mechanism", "staircase:eps=1e-5", "--eps", "1"}, code: exitUsage, want: []string{"eps = 1e-5", "2^-12"}},
		{name: "bad key", args: []string{"compose", "--mechanism", "staircase:eps=1,scale=2", "--eps", "1"}, code: exitUsage, want: []string{"unknown key"}},
		{name: "bad cost", args: []string{"compose", "--mechanism", "staircase:eps=1,cost=l3", "--eps", "1"}, code: exitUsage, want: []string{"cost"}},
		{name: "bad dim", args: []string{"compose", "--mechanism", "staircase:eps=1,dim=3", "--eps", "1"}, code: exitUsage, want: []string{"dim = 3"}},
		{name: "bad count", args: []string{"compose", "--mechanism", "staircase:eps=1,count=1.5", "--eps", "1"}, code: exitUsage, want: []string{"count"}},
	})
}

// TestCalibrateStaircase: `calibrate --mechanism staircase` returns a per-release ε whose
// K-fold composition, re-checked with `compose --mechanism`, meets the budget, within
// 1e-3 relative of the (ε0, 0) answer of KOV Thm 3.3 or above it (the staircase's PLD is
// never worse than its guarantee's pair); an ε/K below 2^−12 is reported infeasible.
func TestCalibrateStaircase(t *testing.T) {
	v := decodeJSON(t, mustSucceed(t, "", "calibrate", "--mechanism", "staircase", "--sensitivity", "2", "--k", "20", "--eps", "4", "--delta", "1e-6", "--json"))
	eps0, kov := number(t, v, "epsilon_per_release"), number(t, v, "kov")
	if !(eps0 >= kov*(1-1e-3)) {
		t.Errorf("ε0 = %v below the (ε0, 0) answer %v", eps0, kov)
	}
	c := decodeJSON(t, mustSucceed(t, "", "compose", "--mechanism", "staircase:eps="+strconv.FormatFloat(eps0, 'g', -1, 64)+",sensitivity=2,count=20", "--delta", "1e-6", "--json"))
	if e := number(t, c, "epsilon"); e > 4 {
		t.Errorf("20 releases at ε0 = %v compose to ε = %v > 4", eps0, e)
	}
	r := dpkitRun(t, "", "calibrate", "--mechanism", "staircase", "--sensitivity", "1", "--k", "100000", "--eps", "1", "--delta", "1e-6")
	if r.code != exitFailure || !strings.Contains(r.stderr, "2^-12") {
		t.Errorf("ε/K = 1e-5: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestNoiseExponential: --utilities FILE with exponential and report-noisy-max. The
// probabilities are the softmax of ε·u/(2Δ) (ε·u/Δ with --monotonic) within the
// quantization (1e-9 relative here); 2000 selections put the best candidate's frequency
// within 6 binomial standard deviations of its probability (false-rejection probability
// < 2e-9); labels come from the file or are the indices.
func TestNoiseExponential(t *testing.T) {
	file := filepath.Join(t.TempDir(), "u.txt")
	if err := os.WriteFile(file, []byte("# candidates\napple 10\nbanana 8\n\ncherry 2 # low\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		kind  string
		mono  bool
		scale float64
	}{{"exponential", false, 0.5}, {"report-noisy-max", true, 1}} {
		args := []string{"noise", c.kind, "--utilities", file, "--sensitivity", "1", "--eps", "1", "--n", "2000", "--json"}
		if c.mono {
			args = append(args, "--monotonic")
		}
		v := decodeJSON(t, mustSucceed(t, "", args...))
		if got, want := keysOf(v), "delta,epsilon,labels,mechanism,probabilities,selected,utility_gap95"; got != want {
			t.Fatalf("keys %s, want %s", got, want)
		}
		probs := numbers(t, v, "probabilities")
		z := math.Exp(10*c.scale) + math.Exp(8*c.scale) + math.Exp(2*c.scale)
		for i, u := range []float64{10, 8, 2} {
			if want := math.Exp(u*c.scale) / z; math.Abs(probs[i]/want-1) > 1e-9 {
				t.Errorf("%s: P(%d) = %v, softmax %v", c.kind, i, probs[i], want)
			}
		}
		sel := numbers(t, v, "selected")
		best := 0
		for _, s := range sel {
			if s == 0 {
				best++
			}
		}
		p := probs[0]
		if sd := math.Sqrt(2000 * p * (1 - p)); math.Abs(float64(best)-2000*p) > 6*sd {
			t.Errorf("%s: best chosen %d of 2000 times, expected %.0f", c.kind, best, 2000*p)
		}
		if labels := v["labels"].([]any); labels[0] != "apple" || labels[2] != "cherry" {
			t.Errorf("labels %v", labels)
		}
	}
	checkErrors(t, []errorCase{
		{name: "no file", args: []string{"noise", "exponential", "--sensitivity", "1", "--eps", "1"}, code: exitUsage, want: []string{"--utilities"}},
		{name: "bad line", stdin: "a 1\nb x\n", args: []string{"noise", "exponential", "--utilities", "-", "--sensitivity", "1", "--eps", "1"}, code: exitUsage, want: []string{"line 2"}},
		{name: "empty", stdin: "# nothing\n", args: []string{"noise", "exponential", "--utilities", "-", "--sensitivity", "1", "--eps", "1"}, code: exitUsage, want: []string{"no candidate"}},
		{name: "value", stdin: "1\n", args: []string{"noise", "exponential", "--utilities", "-", "--value", "1", "--sensitivity", "1", "--eps", "1"}, code: exitUsage, want: []string{"--value"}},
		{name: "utilities laplace", args: []string{"noise", "laplace", "--utilities", "x", "--value", "1", "--sensitivity", "1", "--eps", "1"}, code: exitUsage, want: []string{"--utilities"}},
	})
}

// TestComposeJL: --mechanism jl-cut and jl-variance compose the JL sketches as r rows of
// (ε0, δ0) pairs (KOV App. C.1): one release's certified bracket contains its budget
// ε = 1 (ε0 is the exact maximum), and three releases' bracket contains the exact Thm 3.3
// composition of the 3r pairs (compose --mech, a separate path), 1.557 against 3.0 for
// three (1, 1e-6) guarantees. The two kinds have the same rows for the same (ε, δ, η, ν)
// (they differ in the weight w), so the same answers.
func TestComposeJL(t *testing.T) {
	m, err := mechanism.NewJLCut(mechanism.JLCutOptions{Epsilon: 1, Delta: 1e-6, Eta: 0.1, Nu: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	rows := fmt.Sprintf("%v,%v,%d", m.RowEpsilon(), m.RowDelta(), 3*m.Rows())
	exact := number(t, decodeJSON(t, mustSucceed(t, "", "compose", "--mech", rows, "--delta", "1e-5", "--json")), "epsilon")
	if math.Abs(exact-1.557) > 5e-4 {
		t.Errorf("docs/mechanisms.md quotes 1.557 for three releases; exact %v", exact)
	}
	for _, kind := range []string{"jl-cut", "jl-variance"} {
		one := decodeJSON(t, mustSucceed(t, "", "compose", "--mechanism", kind+":eps=1,delta=1e-6,eta=0.1,nu=0.05", "--delta", "1e-6", "--json"))
		if lo, up := number(t, one, "epsilon_lower"), number(t, one, "epsilon"); !(lo <= 1 && 1 <= up && up < 1+1e-6) {
			t.Errorf("%s, one release: [%v, %v], want a bracket of 1", kind, lo, up)
		}
		three := decodeJSON(t, mustSucceed(t, "", "compose", "--mechanism", kind+":eps=1,delta=1e-6,eta=0.1,nu=0.05,count=3", "--delta", "1e-5", "--json"))
		if lo, up := number(t, three, "epsilon_lower"), number(t, three, "epsilon"); !(lo <= exact*(1+1e-12) && exact <= up*(1+1e-12)) || up > 2 {
			t.Errorf("%s, three releases: [%v, %v], exact %v", kind, lo, up, exact)
		}
		checkErrors(t, []errorCase{
			{name: kind + " missing eta", args: []string{"compose", "--mechanism", kind + ":eps=1,delta=1e-6,nu=0.1", "--delta", "1e-5"}, code: exitUsage, want: []string{kind + ": missing eta"}},
			{name: kind + " sensitivity", args: []string{"compose", "--mechanism", kind + ":eps=1,delta=1e-6,eta=0.1,nu=0.1,sensitivity=2", "--delta", "1e-5"}, code: exitUsage, want: []string{"unknown key"}},
			{name: kind + " bad nu", args: []string{"compose", "--mechanism", kind + ":eps=1,delta=1e-6,eta=0.1,nu=1", "--delta", "1e-5"}, code: exitUsage, want: []string{"(0, 1)"}},
		})
	}
}

// TestCalibrateJL: calibrate --mechanism jl-cut|jl-variance returns a per-release ε (δ =
// D/K) whose K releases, re-checked with compose --mechanism, meet the budget, while
// 2e-4 more does not (the bisection's 1e-4); its rows and weight are the mechanism's at
// that ε; it is above the basic split E/K (3.28 times it at K = 10: ten releases of
// 2952 rows compose far better than ten (0.1, 1e-7) guarantees); K = 1 gives E itself.
func TestCalibrateJL(t *testing.T) {
	for _, kind := range []string{"jl-cut", "jl-variance"} {
		v := decodeJSON(t, mustSucceed(t, "", "calibrate", "--mechanism", kind, "--eta", "0.1", "--nu", "0.05", "--k", "10", "--eps", "1", "--delta", "1e-6", "--json"))
		eps, dr := number(t, v, "epsilon_per_release"), number(t, v, "delta_per_release")
		if dr != 1e-7 || !(eps > 3.2*0.1) || number(t, v, "epsilon_upper") > 1 || number(t, v, "basic_epsilon_per_release") != 0.1 {
			t.Errorf("%s: %v", kind, v)
		}
		at := func(e float64) float64 {
			arg := fmt.Sprintf("%s:eps=%v,delta=1e-7,eta=0.1,nu=0.05,count=10", kind, e)
			return number(t, decodeJSON(t, mustSucceed(t, "", "compose", "--mechanism", arg, "--delta", "1e-6", "--json")), "epsilon")
		}
		if got, more := at(eps), at(eps*(1+2e-4)); got > 1 || more <= 1 {
			t.Errorf("%s: ε per release %v composes to %v; 2e-4 more to %v", kind, eps, got, more)
		}
		m, err := newJL(kind, eps, 1e-7, 0.1, 0.05)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := newJL(kind, 0.1, 1e-7, 0.1, 0.05)
		if number(t, v, "weight") != m.Weight() || number(t, v, "row_epsilon") != m.RowEpsilon() || number(t, v, "rows") != 2952 || number(t, v, "basic_weight") != b.Weight() {
			t.Errorf("%s: rows and weight %v, the mechanism's at ε = %v: %d, %v, %v", kind, v, eps, m.Rows(), m.RowEpsilon(), m.Weight())
		}
		if kind == "jl-variance" && (math.Abs(eps/0.3283-1) > 2e-4 || math.Abs(number(t, v, "weight")/9984-1) > 1e-4 || math.Abs(number(t, v, "basic_weight")/28547-1) > 1e-4) {
			t.Errorf("docs/mechanisms.md quotes ε = 0.3283, w = 9984 (28547 at E/K); got %v", v)
		}
		one := decodeJSON(t, mustSucceed(t, "", "calibrate", "--mechanism", kind, "--eta", "0.5", "--nu", "0.1", "--k", "1", "--eps", "2", "--delta", "1e-5", "--json"))
		if number(t, one, "epsilon_per_release") != 2 {
			t.Errorf("%s: K = 1 gives %v", kind, one)
		}
	}
	text := mustSucceed(t, "", "calibrate", "--mechanism", "jl-variance", "--eta", "0.1", "--nu", "0.05", "--k", "10", "--eps", "1", "--delta", "1e-6")
	if !strings.Contains(text, "weight w") || !strings.Contains(text, "29520 rows") {
		t.Errorf("text output %q", text)
	}
	checkErrors(t, []errorCase{
		{name: "missing eta", args: []string{"calibrate", "--mechanism", "jl-cut", "--nu", "0.1", "--k", "3", "--eps", "1", "--delta", "1e-6"}, code: exitUsage, want: []string{"missing --eta"}},
		{name: "missing k", args: []string{"calibrate", "--mechanism", "jl-variance", "--eta", "0.1", "--nu", "0.1", "--eps", "1", "--delta", "1e-6"}, code: exitUsage, want: []string{"missing --k"}},
		{name: "bad nu", args: []string{"calibrate", "--mechanism", "jl-cut", "--eta", "0.1", "--nu", "1", "--k", "3", "--eps", "1", "--delta", "1e-6"}, code: exitUsage, want: []string{"--nu", "(0, 1)"}},
		{name: "tiny eta", args: []string{"calibrate", "--mechanism", "jl-cut", "--eta", "1e-7", "--nu", "0.1", "--k", "3", "--eps", "1", "--delta", "1e-6"}, code: exitUsage, want: []string{"--eta", "2^22"}},
		{name: "delta 0", args: []string{"calibrate", "--mechanism", "jl-variance", "--eta", "0.1", "--nu", "0.1", "--k", "3", "--eps", "1", "--delta", "0"}, code: exitUsage, want: []string{"--delta"}},
		{name: "sensitivity", args: []string{"calibrate", "--mechanism", "jl-cut", "--eta", "0.1", "--nu", "0.1", "--k", "3", "--eps", "1", "--delta", "1e-6", "--sensitivity", "1"}, code: exitUsage, want: []string{"do not apply"}},
		{name: "eta for gaussian", args: []string{"calibrate", "--mechanism", "gaussian", "--eta", "0.1", "--k", "3", "--sensitivity", "1", "--eps", "1", "--delta", "1e-6"}, code: exitUsage, want: []string{"--eta and --nu apply"}},
		{name: "eta without mechanism", args: []string{"calibrate", "--eta", "0.1", "--k", "3", "--eps", "1", "--delta", "1e-6"}, code: exitUsage, want: []string{"--eta"}},
		{name: "too many rows", args: []string{"calibrate", "--mechanism", "jl-cut", "--eta", "0.1", "--nu", "0.1", "--k", "1e12", "--eps", "1", "--delta", "1e-6"}, code: exitUsage, want: []string{"--k"}},
	})
}

// checkErrors runs each case with checkError (the error contract), as a subtest; the
// command path is "dpkit" and the command (with its subcommand for ldp and gce).
func checkErrors(t *testing.T, cases []errorCase) {
	t.Helper()
	for _, c := range cases {
		path := "dpkit " + c.args[0]
		if (c.args[0] == "ldp" || c.args[0] == "gce") && len(c.args) > 1 && !strings.HasPrefix(c.args[1], "-") {
			path += " " + c.args[1]
		}
		t.Run(c.name, func(t *testing.T) { checkError(t, path, c) })
	}
}
