package main

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/dpkit/dpkit/internal/testenv"
)

// Thm 3.4.2 / Cor 3.4.7: the optimal total variation is tanh(ε/2)·‖P0 − P1‖_TV, by the
// binary mechanism. Here ‖P0 − P1‖_TV = 0.3.
func TestLDPOptimalTV(t *testing.T) {
	v := decodeJSON(t, mustSucceed(t, "", "ldp", "optimal", "--k", "3", "--eps", "1", "--utility", "tv",
		"--p0", "0.5,0.3,0.2", "--p1", "0.2,0.3,0.5", "--json"))
	if got, want := keysOf(v), "compare,delta,epsilon,matrix,mechanism,utility"; got != want {
		t.Fatalf("keys %s, want %s", got, want)
	}
	if v["mechanism"] != "binary" {
		t.Errorf("mechanism %v, want binary", v["mechanism"])
	}
	if got, want := number(t, v, "utility"), math.Tanh(0.5)*0.3; math.Abs(got-want) > 1e-12 {
		t.Errorf("utility %v, want tanh(1/2)·0.3 = %v", got, want)
	}
	rows := v["matrix"].([]any)
	if len(rows) != 3 {
		t.Fatalf("matrix has %d rows, want 3", len(rows))
	}
	for x, r := range rows {
		s := 0.0
		for _, e := range r.([]any) {
			f, _ := e.(json.Number).Float64()
			s += f
		}
		if math.Abs(s-1) > 1e-12 {
			t.Errorf("row %d sums to %v", x, s)
		}
	}
}

func TestLDPOptimalText(t *testing.T) {
	out := mustSucceed(t, "", "ldp", "optimal", "--k", "4", "--eps", "10", "--utility", "mi")
	for _, want := range []string{"mechanism: rr", "utility (mi): ", "matrix Q(y|x)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// Randomize then estimate through the CLI with the secure source: n = 20000 users with
// values 0 (50%), 1 (30%), 2 (20%). Each estimate must be within 5.6 of its reported
// standard errors of the truth; the standard error is estimated to within a few percent
// at this n, and a 5.6σ deviation has probability 2.1e-8 (normal approximation): over
// the 2 × 3 checks the false-rejection probability is below 1e-6.
func TestLDPRandomizeEstimate(t *testing.T) {
	var in strings.Builder
	const n = 20000
	for i := range n {
		switch {
		case i < n/2:
			in.WriteString("0\n")
		case i < n*8/10:
			in.WriteString("1\n")
		default:
			in.WriteString("2 # comment\n")
		}
	}
	truth := []float64{0.5, 0.3, 0.2}
	for _, mech := range []string{"rr", "binary"} {
		reports := mustSucceed(t, in.String(), "ldp", "randomize", "--mechanism", mech, "--k", "3", "--eps", "1")
		if lines := strings.Count(reports, "\n"); lines != n {
			t.Fatalf("%s: %d reports, want %d", mech, lines, n)
		}
		v := decodeJSON(t, mustSucceed(t, reports, "ldp", "estimate", "--mechanism", mech, "--k", "3", "--eps", "1", "--json"))
		if got, want := keysOf(v), "frequencies,n,std_errors"; got != want {
			t.Fatalf("keys %s, want %s", got, want)
		}
		freq, se := v["frequencies"].([]any), v["std_errors"].([]any)
		for i, p := range truth {
			f, _ := freq[i].(json.Number).Float64()
			s, _ := se[i].(json.Number).Float64()
			if math.Abs(f-p) > 5.6*s || s <= 0 {
				t.Errorf("%s value %d: estimate %v ± %v, truth %v", mech, i, f, s, p)
			}
		}
	}
}

func TestLDPErrors(t *testing.T) {
	for _, c := range []errorCase{
		{name: "no command", args: []string{"ldp"}, code: exitUsage, want: []string{"missing ldp command"}},
		{name: "missing p1", args: []string{"ldp", "optimal", "--k", "3", "--eps", "1", "--utility", "kl", "--p0", "0.2,0.3,0.5"}, code: exitUsage, want: []string{"--p0 and --p1"}},
		{name: "k too large", args: []string{"ldp", "optimal", "--k", "15", "--eps", "1", "--utility", "mi"}, code: exitUsage, want: []string{"--k", "[2, 14]"}},
		{name: "prior length", args: []string{"ldp", "optimal", "--k", "3", "--eps", "1", "--utility", "mi", "--prior", "0.5,0.5"}, code: exitUsage, want: []string{"--prior needs 3"}},
		{name: "prior sum", args: []string{"ldp", "optimal", "--k", "2", "--eps", "1", "--utility", "mi", "--prior", "0.5,0.6"}, code: exitUsage, want: []string{"summing to 1"}},
		{name: "kl zero", args: []string{"ldp", "optimal", "--k", "2", "--eps", "1", "--utility", "kl", "--p0", "1,0", "--p1", "0.5,0.5"}, code: exitUsage, want: []string{"p0[1]", "> 0"}},
		{name: "eps NaN", args: []string{"ldp", "optimal", "--k", "2", "--eps", "NaN", "--utility", "mi"}, code: exitUsage, want: []string{"--eps"}},
		{name: "bad value", stdin: "0\n7\n", args: []string{"ldp", "randomize", "--mechanism", "rr", "--k", "3", "--eps", "1"}, code: exitUsage, want: []string{"line 2", "[0, 2]"}},
		{name: "bad report", stdin: "01 1\n", args: []string{"ldp", "estimate", "--mechanism", "binary", "--k", "3", "--eps", "1"}, code: exitUsage, want: []string{"line 1"}},
		{name: "eps zero", stdin: "0\n1\n", args: []string{"ldp", "estimate", "--mechanism", "rr", "--k", "3", "--eps", "0"}, code: exitFailure, want: []string{"infeasible"}},
		{name: "mechanism", args: []string{"ldp", "randomize", "--mechanism", "laplace", "--k", "3", "--eps", "1"}, code: exitUsage, want: []string{"rr, binary"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := dpkitRun(t, c.stdin, c.args...)
			if r.code != c.code {
				t.Fatalf("exit %d, want %d (stderr %q)", r.code, c.code, r.stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q lacks %q", r.stderr, w)
				}
			}
		})
	}
}

// The worked example of docs/local-dp.md: XOR of three parties at ε = (1, 1, 2). The
// reference ½(1 + tanh(½)² tanh(1)) = 0.58132007928… is checked at 200 bits in
// multiparty's TestXORWorkedExample; here the float64 formula, 1e-15 relative.
func TestMultipartyXORExample(t *testing.T) {
	v := decodeJSON(t, mustSucceed(t, "", "multiparty", "--eps", "1,1,2", "--function", "xor", "--json"))
	if got, want := keysOf(v), "average_accuracy,bits,decision_table,measure,worst_case_accuracy,worst_case_upper_bound"; got != want {
		t.Fatalf("keys %s, want %s", got, want)
	}
	want := 0.5 * (1 + math.Tanh(0.5)*math.Tanh(0.5)*math.Tanh(1))
	for _, key := range []string{"average_accuracy", "worst_case_accuracy", "worst_case_upper_bound"} {
		if got := number(t, v, key); math.Abs(got-want) > 1e-15 {
			t.Errorf("%s = %v, want %v", key, got, want)
		}
	}
	table := v["decision_table"].(map[string]any)
	if len(table) != 8 {
		t.Fatalf("decision table has %d transcripts, want 8", len(table))
	}
	// The Bayes rule for the parity is the parity of the noisy reports (symbol 2 = 1).
	for tau, d := range table {
		parity := int64(strings.Count(tau, "2") % 2)
		if got, _ := d.(json.Number).Int64(); got != parity {
			t.Errorf("transcript %s → %v, want %d", tau, d, parity)
		}
	}
}

func TestMultipartyFunctions(t *testing.T) {
	for _, f := range []string{"and", "or", "majority"} {
		v := decodeJSON(t, mustSucceed(t, "", "multiparty", "--eps", "1,2,0.5", "--delta", "0.01", "--function", f, "--json"))
		avg, wc := number(t, v, "average_accuracy"), number(t, v, "worst_case_accuracy")
		if !(0.5 <= wc && wc <= avg && avg <= 1) {
			t.Errorf("%s: worst case %v, average %v: want ½ ≤ worst ≤ average ≤ 1", f, wc, avg)
		}
		if n := len(v["decision_table"].(map[string]any)); n != 64 {
			t.Errorf("%s: %d transcripts, want 4^3 = 64", f, n)
		}
	}
	// 12 parties at a common ε: the symmetric program (13 × 13 orbits) is solved exactly;
	// the certified interval is at most 1e-9 wide and below the average. The value
	// itself is checked against the unreduced program and the reference LP in package
	// multiparty. With δ = 0 the 2^12 = 4096 transcripts are at the table's limit.
	v := decodeJSON(t, mustSucceed(t, "", "multiparty", "--eps", strings.TrimSuffix(strings.Repeat("1,", 12), ","), "--function", "majority", "--json"))
	avg, wc, up := number(t, v, "average_accuracy"), number(t, v, "worst_case_accuracy"), number(t, v, "worst_case_upper_bound")
	if !(0.5 <= wc && wc <= up && up-wc <= 1e-9 && up <= avg+1e-12) {
		t.Errorf("12 parties: worst case in [%v, %v], average %v", wc, up, avg)
	}
	if n := len(v["decision_table"].(map[string]any)); n != 4096 {
		t.Errorf("12 parties: %d transcripts in the table, want 4096", n)
	}
	// 10 parties with distinct ε and δ > 0: no symmetry and 4^10 transcripts, still a
	// certified interval (at most 1e-6 wide), below the average accuracy. Seconds to a
	// minute on two cores: the long step only (package multiparty solves the same AND of
	// 10 in its default step, TestWorstCaseTenUnequalDelta/and).
	t.Run("and-of-10", func(t *testing.T) {
		testenv.Long(t)
		v := decodeJSON(t, mustSucceed(t, "", "multiparty", "--eps", "1,1.1,1.2,1.3,1.4,1.5,1.6,1.7,1.8,1.9", "--delta", "0.01", "--function", "and", "--json"))
		avg, wc, up := number(t, v, "average_accuracy"), number(t, v, "worst_case_accuracy"), number(t, v, "worst_case_upper_bound")
		if !(0.5 <= wc && wc <= up && up-wc <= 1e-6 && up <= avg+1e-12) {
			t.Errorf("10 unequal parties with δ > 0: worst case in [%v, %v], average %v", wc, up, avg)
		}
	})
	out := mustSucceed(t, "", "multiparty", "--eps", "1,1", "--function", "or")
	for _, want := range []string{"average accuracy: ", "worst-case accuracy: ", "transcript"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
}

func TestMultipartyErrors(t *testing.T) {
	for _, c := range []errorCase{
		{name: "missing eps", args: []string{"multiparty", "--function", "xor"}, code: exitUsage, want: []string{"missing --eps"}},
		{name: "missing function", args: []string{"multiparty", "--eps", "1"}, code: exitUsage, want: []string{"missing --function"}},
		{name: "bad function", args: []string{"multiparty", "--eps", "1", "--function", "nand"}, code: exitUsage, want: []string{"xor, and, or, majority"}},
		{name: "13 parties", args: []string{"multiparty", "--eps", strings.TrimSuffix(strings.Repeat("1,", 13), ","), "--function", "xor"}, code: exitUsage, want: []string{"1 to 12"}},
		{name: "negative eps", args: []string{"multiparty", "--eps", "1,-1", "--function", "xor"}, code: exitUsage, want: []string{"eps[1]"}},
		{name: "delta count", args: []string{"multiparty", "--eps", "1,1,1", "--delta", "0.1,0.1", "--function", "xor"}, code: exitUsage, want: []string{"--delta lists 2"}},
		{name: "delta range", args: []string{"multiparty", "--eps", "1", "--delta", "2", "--function", "xor"}, code: exitUsage, want: []string{"delta[0]", "[0, 1]"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := dpkitRun(t, c.stdin, c.args...)
			if r.code != c.code {
				t.Fatalf("exit %d, want %d (stderr %q)", r.code, c.code, r.stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q lacks %q", r.stderr, w)
				}
			}
		})
	}
}

// TestLDPCompareAndDelta: --compare reports the binary mechanism, randomized response and
// the truncated geometric baseline; --delta with K = 2 the quaternary mechanism; the new
// f-divergence utilities. Reference values from ldp/testdata/reference.json (50 digits,
// the thesis's definitions; 1e-9 relative): kl-3 geometric 0.0341150605724318598…,
// rr 0.0354765012482582684…, optimum = binary 0.0399973798165085318…; quaternary-tv
// 0.140248795706222880…; hellinger-4 optimum 0.0950633662420745221….
func TestLDPCompareAndDelta(t *testing.T) {
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got/want-1) > 1e-9 {
			t.Errorf("%s: %v, reference %v", name, got, want)
		}
	}
	v := decodeJSON(t, mustSucceed(t, "", "ldp", "optimal", "--k", "3", "--eps", "1", "--utility", "kl",
		"--p0", "0.5,0.3,0.2", "--p1", "0.2,0.3,0.5", "--compare", "--json"))
	near("kl optimum", number(t, v, "utility"), 0.0399973798165085318)
	cmp, ok := v["compare"].([]any)
	if !ok || len(cmp) != 3 {
		t.Fatalf("compare = %v", v["compare"])
	}
	want := map[string]float64{"binary": 0.0399973798165085318, "rr": 0.0354765012482582684, "geometric": 0.0341150605724318598}
	for _, x := range cmp {
		m := x.(map[string]any)
		name := m["mechanism"].(string)
		u, _ := m["utility"].(json.Number).Float64()
		r, _ := m["ratio"].(json.Number).Float64()
		near(name, u, want[name])
		near(name+" ratio", r, want[name]/0.0399973798165085318)
	}
	v = decodeJSON(t, mustSucceed(t, "", "ldp", "optimal", "--k", "2", "--eps", "1", "--delta", "0.01", "--utility", "tv",
		"--p0", "0.7,0.3", "--p1", "0.4,0.6", "--json"))
	if v["mechanism"] != "quaternary" || number(t, v, "delta") != 0.01 || v["compare"] != nil {
		t.Errorf("quaternary: %v", v)
	}
	near("quaternary tv", number(t, v, "utility"), 0.140248795706222880)
	v = decodeJSON(t, mustSucceed(t, "", "ldp", "optimal", "--k", "4", "--eps", "2", "--utility", "hellinger",
		"--p0", "0.1,0.2,0.3,0.4", "--p1", "0.4,0.3,0.2,0.1", "--json"))
	near("hellinger optimum", number(t, v, "utility"), 0.0950633662420745221)
	out := mustSucceed(t, "", "ldp", "optimal", "--k", "3", "--eps", "1", "--utility", "chi2", "--p0", "0.5,0.3,0.2", "--p1", "0.2,0.3,0.5", "--compare")
	for _, w := range []string{"utility (chi2)", "compared", "geometric"} {
		if !strings.Contains(out, w) {
			t.Errorf("text output lacks %q:\n%s", w, out)
		}
	}
	checkErrors(t, []errorCase{
		{name: "delta k3", args: []string{"ldp", "optimal", "--k", "3", "--eps", "1", "--delta", "0.1", "--utility", "tv", "--p0", "0.5,0.3,0.2", "--p1", "0.2,0.3,0.5"}, code: exitUsage, want: []string{"--delta", "binary data"}},
		{name: "delta range", args: []string{"ldp", "optimal", "--k", "2", "--eps", "1", "--delta", "2", "--utility", "tv", "--p0", "0.5,0.5", "--p1", "0.2,0.8"}, code: exitUsage, want: []string{"--delta"}},
		{name: "chi2 zero", args: []string{"ldp", "optimal", "--k", "2", "--eps", "1", "--utility", "chi2", "--p0", "0.5,0.5", "--p1", "1,0"}, code: exitUsage, want: []string{"p1"}},
		{name: "bad utility", args: []string{"ldp", "optimal", "--k", "2", "--eps", "1", "--utility", "renyi"}, code: exitUsage, want: []string{"hellinger"}},
	})
}

// TestMultipartyMeasures: --accuracy hamming, --bits, --table, --prior against
// multiparty/testdata/reference.json (40 digits, every transcript enumerated): the
// thesis's Fig. 4.2 baselines — the Hamming distance of two parties' two bits, accuracy
// 2 − |d − d̂|: 1.5 at ε = 0 (docs/errata.md, thesis item 6), 1.62412027028950760 at
// ε = 2; the function "y1 ⊕ y2 if x = 0 else y1 ∧ y2" as a truth table: 0.625 at ε = 0,
// 0.781267400268924694 at ε = 2 — and majority of three under a skewed prior with δ = 0.1:
// 0.787625643982376700. Tolerance 1e-12 relative.
func TestMultipartyMeasures(t *testing.T) {
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got/want-1) > 1e-12 {
			t.Errorf("%s: %v, reference %v", name, got, want)
		}
	}
	for _, c := range []struct {
		eps  string
		want float64
	}{{"0", 1.5}, {"2", 1.62412027028950760}} {
		v := decodeJSON(t, mustSucceed(t, "", "multiparty", "--eps", c.eps+","+c.eps, "--bits", "2,2", "--function", "hamming", "--accuracy", "hamming", "--json"))
		near("hamming ε="+c.eps, number(t, v, "average_accuracy"), c.want)
		if v["worst_case_accuracy"] != nil || v["measure"] != "hamming" {
			t.Errorf("hamming: worst case %v, measure %v", v["worst_case_accuracy"], v["measure"])
		}
	}
	table := "# x y1 y2 -> y1 xor y2 if x = 0, y1 and y2 if x = 1\n000 0\n100 0\n010 1\n110 0\n001 1\n101 0\n011 0\n111 1\n"
	for _, c := range []struct {
		eps  string
		want float64
	}{{"0", 0.625}, {"2", 0.781267400268924694}} {
		v := decodeJSON(t, mustSucceed(t, table, "multiparty", "--eps", c.eps+","+c.eps, "--bits", "1,2", "--table", "-", "--json"))
		near("table ε="+c.eps, number(t, v, "average_accuracy"), c.want)
		wc, up := number(t, v, "worst_case_accuracy"), number(t, v, "worst_case_upper_bound")
		if !(wc <= up && up <= number(t, v, "average_accuracy")+1e-12) {
			t.Errorf("table ε=%s: worst case [%v, %v]", c.eps, wc, up)
		}
	}
	v := decodeJSON(t, mustSucceed(t, "", "multiparty", "--eps", "1,0.5,2", "--delta", "0.1", "--function", "majority",
		"--prior", "0.3,0.05,0.1,0.05,0.2,0.1,0.05,0.15", "--json"))
	near("majority prior", number(t, v, "average_accuracy"), 0.787625643982376700)
	dir := t.TempDir()
	short := dir + "/short.txt"
	if err := os.WriteFile(short, []byte("00 0\n01 1\n10 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	checkErrors(t, []errorCase{
		{name: "both", args: []string{"multiparty", "--eps", "1,1", "--function", "xor", "--table", short}, code: exitUsage, want: []string{"exclude"}},
		{name: "missing input", args: []string{"multiparty", "--eps", "1,1", "--table", short}, code: exitUsage, want: []string{"input 11 missing"}},
		{name: "bad line", stdin: "00 0\n0x 1\n", args: []string{"multiparty", "--eps", "1,1", "--table", "-"}, code: exitUsage, want: []string{"line 2"}},
		{name: "hamming parties", args: []string{"multiparty", "--eps", "1,1,1", "--function", "hamming"}, code: exitUsage, want: []string{"two parties"}},
		{name: "bits count", args: []string{"multiparty", "--eps", "1,1", "--bits", "2", "--function", "xor"}, code: exitUsage, want: []string{"--bits"}},
		{name: "too many bits", args: []string{"multiparty", "--eps", "1,1", "--bits", "7,6", "--function", "xor"}, code: exitUsage, want: []string{"13 bits"}},
		{name: "prior length", args: []string{"multiparty", "--eps", "1,1", "--prior", "0.5,0.5", "--function", "xor"}, code: exitUsage, want: []string{"--prior", "4 probabilities"}},
		{name: "prior sum", args: []string{"multiparty", "--eps", "1", "--prior", "0.5,0.6", "--function", "xor"}, code: exitUsage, want: []string{"prior"}},
		{name: "bad measure", args: []string{"multiparty", "--eps", "1", "--accuracy", "l2", "--function", "xor"}, code: exitUsage, want: []string{"--accuracy"}},
	})
}
