package main

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

// homogeneousDelta evaluates the exact privacy curve δ(ε) of the k-fold composition of
// (eps0, delta0)-DP mechanisms literally from docs/errata.md item 1 (KOV Thm 3.3 at any ε):
//
//	δ(ε) = 1−(1−δ0)^k + (1−δ0)^k · Σ_m C(k,m) p^m (1−p)^(k−m) (1 − e^(ε − (2m−k)ε0))₊
//
// in float64, independently of package compose. For k ≤ 100 and ε0 ≤ 1 nothing overflows
// and the result is accurate to ~1e-14 relative, far below the tolerances it is used with.
func homogeneousDelta(eps0, delta0 float64, k int, eps float64) float64 {
	p := math.Exp(eps0) / (1 + math.Exp(eps0))
	sum := 0.0
	for m := 0; m <= k; m++ {
		loss := float64(2*m-k) * eps0
		if loss <= eps {
			continue
		}
		lc, _ := math.Lgamma(float64(k + 1))
		lm, _ := math.Lgamma(float64(m + 1))
		lr, _ := math.Lgamma(float64(k - m + 1))
		prob := math.Exp(lc-lm-lr) * math.Pow(p, float64(m)) * math.Pow(1-p, float64(k-m))
		sum += prob * -math.Expm1(eps-loss)
	}
	// floor + keep·sum with floor = 1 − (1−δ0)^k and keep = (1−δ0)^k in the stable form
	// of docs/errata.md KOV item 3: 1 − δ0 rounds away δ0's low bits (a relative 1e-8 of
	// δ0 = 1e-8), which would move this reference by more than the tolerance it is held to.
	l := float64(k) * math.Log1p(-delta0)
	return -math.Expm1(l) + math.Exp(l)*sum
}

func TestHomogeneousDeltaReference(t *testing.T) {
	// At ε ≥ kε0 only the δ events remain: δ = 1 − (1 − δ0)^k.
	if got, want := homogeneousDelta(0.1, 0.001, 30, 3), -math.Expm1(30*math.Log1p(-0.001)); math.Abs(got-want) > 1e-15 {
		t.Errorf("δ(kε0) = %v, want %v", got, want)
	}
	// One (ε0, 0) mechanism at ε = 0: δ = p − (1−p) = tanh(ε0/2) (total variation).
	if got, want := homogeneousDelta(1, 0, 1, 0), math.Tanh(0.5); math.Abs(got-want) > 1e-15 {
		t.Errorf("δ(0) of one (1, 0)-DP mechanism = %v, want tanh(1/2) = %v", got, want)
	}
}

// The errata example: 30 × (ε = 1, δ = 1e-3) at total δ = 0.06 gives ε = 21.7096
// (docs/errata.md item 1; the grid of KOV eq. (5) would give 22).
func TestComposeErrataExample(t *testing.T) {
	for _, args := range [][]string{
		{"compose", "--mech", "1,0.001,30", "--delta", "0.06", "--json"},
		{"compose", "--mech", "1,0.001,30", "--delta", "0.06", "--json", "--theorem", "exact"},
		{"compose", "--delta=0.06", "--json", "--mech", " 1 , 0.001 , 30 "},
	} {
		v := decodeJSON(t, mustSucceed(t, "", args...))
		if got, want := keysOf(v), "delta,epsilon,epsilon_lower,exact,method,theorem,width"; got != want {
			t.Fatalf("keys %s, want %s", got, want)
		}
		eps, lower := number(t, v, "epsilon"), number(t, v, "epsilon_lower")
		if v["theorem"] != "exact" || v["method"] != "exact-sum" || v["exact"] != true || number(t, v, "delta") != 0.06 {
			t.Errorf("got %v, want theorem exact, method exact-sum, exact true, delta 0.06", v)
		}
		// width is the bracket's own: (ε − ε_lower)/ε, at most 1e-9 (the exact promise) and
		// not 0 (the exact sums' inversion leaves about 1e-13 between them).
		if w := number(t, v, "width"); !(w > 0 && w <= 1e-9) || math.Abs(w-(eps-lower)/eps) > 1e-3*w {
			t.Errorf("width %v, want (ε − ε_lower)/ε = %v in (0, 1e-9]", w, (eps-lower)/eps)
		}
		if rel := math.Abs(eps-21.7096) / 21.7096; rel > 1e-4 {
			t.Errorf("epsilon = %v, want 21.7096 within 1e-4 relative (docs/errata.md, KOV item 1)", eps)
		}
		if !(lower <= eps && (eps-lower)/eps < 1e-9) {
			t.Errorf("epsilon_lower = %v, want ≤ epsilon = %v and within 1e-9", lower, eps)
		}
		// Independent check of the same curve: ε meets δ = 0.06 and is (nearly) the least such.
		if d := homogeneousDelta(1, 0.001, 30, eps); d > 0.06*(1+1e-12) {
			t.Errorf("δ(%v) = %v by the errata formula, above the target 0.06", eps, d)
		}
		if d := homogeneousDelta(1, 0.001, 30, eps*(1-1e-9)); d <= 0.06 {
			t.Errorf("δ(%v) = %v: a smaller ε already meets 0.06", eps*(1-1e-9), d)
		}
	}
}

func TestComposeDeltaAtEpsilon(t *testing.T) {
	v := decodeJSON(t, mustSucceed(t, "", "compose", "--mech", "0.1,0.001,30", "--eps", "1", "--json"))
	if got, want := keysOf(v), "delta,delta_lower,epsilon,exact,method,theorem,width"; got != want {
		t.Fatalf("keys %s, want %s", got, want)
	}
	delta, lower := number(t, v, "delta"), number(t, v, "delta_lower")
	want := homogeneousDelta(0.1, 0.001, 30, 1)
	if number(t, v, "epsilon") != 1 || math.Abs(delta-want) > 1e-11*want || delta < want*(1-1e-14) {
		t.Errorf("δ(1) = %v, want %v (docs/errata.md, KOV item 1 formula) and never below it", delta, want)
	}
	if !(lower <= delta) {
		t.Errorf("delta_lower = %v above delta = %v", lower, delta)
	}
}

func TestComposeClosedFormShape(t *testing.T) {
	for _, th := range []string{"basic", "drv", "kov"} {
		for _, target := range []string{"--delta", "--eps"} {
			value := map[string]string{"--delta": "0.05", "--eps": "2"}[target]
			v := decodeJSON(t, mustSucceed(t, "", "compose", "--mech", "0.1,0.001,30", target, value, "--theorem", th, "--json"))
			value, lowerKey := "epsilon", "epsilon_lower"
			if target == "--eps" {
				value, lowerKey = "delta", "delta_lower"
			}
			if v["theorem"] != th || v["method"] != "closed-form" || v["exact"] != false || number(t, v, lowerKey) != number(t, v, value) || number(t, v, "width") != 0 {
				t.Errorf("%s %s: got %v, want theorem %s, exact false, %s = %s", th, target, v, th, lowerKey, value)
			}
		}
	}
	// Basic composition of 30 × (0.1, 0.001) is exactly (3, 0.03) (KOV Thm 3.1).
	v := decodeJSON(t, mustSucceed(t, "", "compose", "--mech", "0.1,0.001,30", "--delta", "0.05", "--theorem", "basic", "--json"))
	if eps := number(t, v, "epsilon"); math.Abs(eps-3) > 1e-12 {
		t.Errorf("basic epsilon = %v, want 3", eps)
	}
}

// --theorem all reports basic, drv, kov, exact in that order, and the tighter theorems
// give smaller ε: exact ≤ KOV ≤ DRV ≤ basic (KOV §3).
func TestComposeAllOrdering(t *testing.T) {
	v := decodeJSON(t, mustSucceed(t, "", "compose", "--mech", "0.1,0.001,30", "--delta", "0.05", "--theorem", "all", "--json"))
	if keysOf(v) != "results" {
		t.Fatalf("keys %s, want results", keysOf(v))
	}
	results, ok := v["results"].([]any)
	if !ok || len(results) != 4 {
		t.Fatalf("results = %#v, want 4 objects", v["results"])
	}
	var eps []float64
	for i, th := range []string{"basic", "drv", "kov", "exact"} {
		r := results[i].(map[string]any)
		if r["theorem"] != th {
			t.Fatalf("results[%d].theorem = %v, want %s", i, r["theorem"], th)
		}
		if got, want := keysOf(r), "delta,epsilon,epsilon_lower,exact,method,theorem,width"; got != want {
			t.Errorf("results[%d] keys %s, want %s", i, got, want)
		}
		if r["exact"] != (th == "exact") {
			t.Errorf("results[%d].exact = %v", i, r["exact"])
		}
		eps = append(eps, number(t, r, "epsilon"))
	}
	basic, drv, kov, exact := eps[0], eps[1], eps[2], eps[3]
	if !(exact <= kov && kov <= drv && drv <= basic) {
		t.Errorf("epsilons basic %v, drv %v, kov %v, exact %v: want exact ≤ kov ≤ drv ≤ basic", basic, drv, kov, exact)
	}
	if exact >= kov*0.99 {
		t.Errorf("exact %v is not visibly below kov %v", exact, kov)
	}
}

// In "all", a theorem that cannot reach the target δ is an error entry, not a failure:
// δ = 0.0298 is above the floor 1 − 0.999^30 ≈ 0.02957 but below Σ δ_ℓ = 0.03.
func TestComposeAllWithInfeasibleTheorems(t *testing.T) {
	v := decodeJSON(t, mustSucceed(t, "", "compose", "--mech", "0.1,0.001,30", "--delta", "0.0298", "--theorem", "all", "--json"))
	results := v["results"].([]any)
	for i, th := range []string{"basic", "drv", "kov", "exact"} {
		r := results[i].(map[string]any)
		infeasible := th == "basic" || th == "drv"
		if r["theorem"] != th {
			t.Fatalf("results[%d].theorem = %v, want %s", i, r["theorem"], th)
		}
		if infeasible {
			msg, _ := r["error"].(string)
			if keysOf(r) != "error,theorem" || !strings.HasPrefix(msg, "infeasible: ") || !strings.Contains(msg, "0.0298") {
				t.Errorf("%s: got %v, want only theorem and an infeasible error naming the target", th, r)
			}
		} else if _, ok := r["epsilon"]; !ok || r["error"] != nil {
			t.Errorf("%s: got %v, want a result", th, r)
		}
	}
	// The same table without --json: the messages stay on their rows.
	out := mustSucceed(t, "", "compose", "--mech", "0.1,0.001,30", "--delta", "0.0298", "--theorem", "all")
	if !strings.Contains(out, "basic    infeasible: basic composition needs delta") {
		t.Errorf("table:\n%s", out)
	}
}

func TestComposeTable(t *testing.T) {
	out := mustSucceed(t, "", "compose", "--mech", "1,0.001,30", "--delta", "0.06")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("table has %d lines, want header, exact row, floor:\n%s", len(lines), out)
	}
	if f := strings.Fields(lines[0]); strings.Join(f, " ") != "theorem epsilon delta epsilon lower exact width" {
		t.Errorf("header %q", lines[0])
	}
	f := strings.Fields(lines[1])
	if len(f) != 6 || f[0] != "exact" || !strings.HasPrefix(f[1], "21.7096") || f[2] != "0.06" || f[4] != "yes" || !widthWithinExact(f[5]) {
		t.Errorf("row %q", lines[1])
	}
	if strings.Index(lines[0], "delta") != strings.Index(lines[1], "0.06") {
		t.Errorf("columns not aligned:\n%s", out)
	}
	if !strings.HasPrefix(lines[2], "floor: total delta ≥ 1 − Π(1 − δ_ℓ) = 0.0295690327369") {
		t.Errorf("floor line %q", lines[2])
	}

	// Pure DP: no floor line; --eps: the lower column is delta's.
	out = mustSucceed(t, "", "compose", "--mech", "0.5,0,10", "--eps", "2", "--theorem", "all")
	if strings.Contains(out, "floor") || !strings.Contains(out, "delta lower") || strings.Count(out, "\n") != 5 {
		t.Errorf("pure-DP table:\n%s", out)
	}
}

// Stated ranges are enforced before any work is done, every failure is one line naming
// the input, and the exit status tells usage errors (2) from infeasible requests (1).
func TestComposeErrors(t *testing.T) {
	mech := []string{"compose", "--delta", "0.1", "--mech"}
	for _, c := range []errorCase{
		{name: "delta above 1", args: append(mech, "0.1,2"), code: exitUsage,
			want: []string{`dpkit compose: invalid --mech "0.1,2": delta = 2: want in [0, 1]`}},
		{name: "NaN epsilon", args: append(mech, "NaN"), code: exitUsage,
			want: []string{`invalid --mech "NaN": epsilon = NaN: want a finite number ≥ 0`}},
		{name: "infinite epsilon", args: append(mech, "inf,0"), code: exitUsage,
			want: []string{`invalid --mech "inf,0": epsilon = +Inf: want a finite number ≥ 0`}},
		{name: "negative epsilon", args: append(mech, "-0.5,0.001"), code: exitUsage,
			want: []string{`invalid --mech "-0.5,0.001": epsilon = -0.5: want a finite number ≥ 0`}},
		{name: "NaN delta", args: append(mech, "0.1,nan"), code: exitUsage, want: []string{`delta = NaN: want in [0, 1]`}},
		{name: "negative delta", args: append(mech, "0.1,-1e-9"), code: exitUsage, want: []string{`delta = -1e-09: want in [0, 1]`}},
		{name: "count 0", args: append(mech, "0.1,0,0"), code: exitUsage,
			want: []string{`invalid --mech "0.1,0,0": count = 0: want an integer in [1, 1000000000000]`}},
		{name: "negative count", args: append(mech, "0.1,0,-3"), code: exitUsage, want: []string{`count = -3: want an integer in [1, 1000000000000]`}},
		{name: "fractional count", args: append(mech, "0.1,0,1.5"), code: exitUsage, want: []string{`count = "1.5": want an integer`}},
		{name: "count overflow", args: append(mech, "0.1,0,99999999999999999999"), code: exitUsage, want: []string{`count = "99999999999999999999"`}},
		{name: "count above MaxCount", args: append(mech, "0.1,0,1000000000001"), code: exitUsage, want: []string{`count = 1000000000001`}},
		{name: "malformed epsilon", args: append(mech, "abc"), code: exitUsage, want: []string{`invalid --mech "abc": epsilon = "abc": want a finite number ≥ 0`}},
		{name: "empty part", args: append(mech, "0.1,,3"), code: exitUsage, want: []string{`delta = "": want in [0, 1]`}},
		{name: "four parts", args: append(mech, "0.1,0,3,4"), code: exitUsage, want: []string{`parts = 4: want EPS[,DELTA[,COUNT]]`}},
		{name: "missing mech value", args: []string{"compose", "--delta", "0.1", "--mech"}, code: exitUsage, want: []string{"flag needs an argument: --mech"}},
		{name: "no workload", args: []string{"compose", "--delta", "0.1"}, code: exitUsage, want: []string{"no mechanisms"}},
		{name: "both targets", args: []string{"compose", "--mech", "0.1", "--delta", "0.1", "--eps", "1"}, code: exitUsage,
			want: []string{"--delta and --eps both given: give exactly one"}},
		{name: "no target", args: []string{"compose", "--mech", "0.1"}, code: exitUsage, want: []string{"missing --delta or --eps"}},
		{name: "delta above 1 flag", args: []string{"compose", "--mech", "0.1", "--delta", "1.5"}, code: exitUsage,
			want: []string{`invalid --delta "1.5": want in [0, 1]`}},
		{name: "NaN delta flag", args: []string{"compose", "--mech", "0.1", "--delta", "NaN"}, code: exitUsage, want: []string{`invalid --delta "NaN"`}},
		{name: "negative eps flag", args: []string{"compose", "--mech", "0.1", "--eps", "-1"}, code: exitUsage,
			want: []string{`invalid --eps "-1": want a finite number ≥ 0`}},
		{name: "tolerance", args: []string{"compose", "--mech", "0.1", "--eps", "1", "--tolerance", "0"}, code: exitUsage,
			want: []string{`invalid --tolerance "0": want in (0, 1)`}},
		{name: "unknown theorem", args: []string{"compose", "--mech", "0.1", "--eps", "1", "--theorem", "rdp"}, code: exitUsage,
			want: []string{`invalid --theorem "rdp": want one of exact, kov, drv, basic, all`}},
		{name: "unknown flag", args: []string{"compose", "--mech", "0.1", "--eps", "1", "--epsilon", "1"}, code: exitUsage,
			want: []string{"unknown flag: --epsilon"}},
		{name: "positional argument", args: []string{"compose", "--eps", "1", "0.1,0,3"}, code: exitUsage, want: []string{`unexpected argument "0.1,0,3"`}},
		{name: "total epsilon overflows", args: []string{"compose", "--eps", "1", "--mech", "1e308,0,10"}, code: exitUsage,
			want: []string{"invalid workload: total epsilon Σ count·ε = +Inf"}},
		{name: "total count", args: []string{"compose", "--eps", "1", "--mech", "0.1,0,1000000000000", "--mech", "0.2"}, code: exitUsage,
			want: []string{"invalid total_count = 1000000000001"}},

		// Infeasible requests: exit 1 with the library's reason.
		{name: "delta below the floor", args: []string{"compose", "--mech", "0.1,0.001,30", "--delta", "0.01"}, code: exitFailure,
			want: []string{"dpkit compose: infeasible: total delta 0.01 is below the floor", "0.0295690327369"}},
		{name: "basic below sum of deltas", args: []string{"compose", "--mech", "0.1,0.001,30", "--delta", "0.0298", "--theorem", "basic"}, code: exitFailure,
			want: []string{"infeasible: basic composition needs delta ≥ Σ δ_ℓ"}},
		{name: "kov below the floor", args: []string{"compose", "--mech", "0.1,0.001,30", "--delta", "0.01", "--theorem", "kov", "--json"}, code: exitFailure,
			want: []string{"infeasible: total delta 0.01 is below the floor"}},
	} {
		t.Run(c.name, func(t *testing.T) { checkError(t, "dpkit compose", c) })
	}
}

func TestComposeMechFileErrors(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.txt", "# workload\n0.1,1e-6,10\n\n0.2,0.5,0   # oops\n0.3\n")
	for _, c := range []errorCase{
		{name: "bad line", args: []string{"compose", "--eps", "1", "--mech-file", bad}, code: exitUsage,
			want: []string{fmt.Sprintf(`invalid --mech-file %q line 4: "0.2,0.5,0": count = 0: want an integer in [1, 1000000000000]`, bad)}},
		{name: "bad line on stdin", stdin: "0.1\n0.1,x\n", args: []string{"compose", "--eps", "1", "--mech-file", "-"}, code: exitUsage,
			want: []string{`invalid --mech-file "-" line 2: "0.1,x": delta = "x": want in [0, 1]`}},
		{name: "missing file", args: []string{"compose", "--eps", "1", "--mech-file", dir + "/nope.txt"}, code: exitUsage,
			want: []string{fmt.Sprintf(`cannot read --mech-file %q: no such file or directory`, dir+"/nope.txt")}},
		{name: "directory", args: []string{"compose", "--eps", "1", "--mech-file", dir}, code: exitUsage, want: []string{"--mech-file"}},
		{name: "stdin twice", stdin: "0.1\n", args: []string{"compose", "--eps", "1", "--mech-file", "-", "--mech-file", "-"}, code: exitUsage,
			want: []string{`--mech-file "-" given twice`}},
		{name: "only comments", stdin: "# nothing\n\n", args: []string{"compose", "--eps", "1", "--mech-file", "-"}, code: exitUsage,
			want: []string{"no mechanisms"}},
		{name: "line too long", stdin: "0.1\n" + strings.Repeat(" ", maxMechLine+1) + "\n", args: []string{"compose", "--eps", "1", "--mech-file", "-"}, code: exitUsage,
			want: []string{`invalid --mech-file "-" line 2: longer than`}},
	} {
		t.Run(c.name, func(t *testing.T) { checkError(t, "dpkit compose", c) })
	}
}

// A workload of a thousand lines reads like the same releases given with --mech: the
// composition only depends on how many releases of each (ε, δ) there are. (The exact
// theorem groups equal entries, so its answer is identical; the closed forms sum entry
// by entry, so theirs may differ in the last digits.)
func TestComposeMechFileThousandLines(t *testing.T) {
	var file strings.Builder
	file.WriteString("# 1000 releases: 500 × (0.01, 1e-9), 300 × (0.02, 0), 200 × (0.05, 1e-8)\n")
	for i := range 1000 {
		switch {
		case i%10 < 5:
			fmt.Fprintf(&file, "0.01, 1e-9   # release %d\n", i)
		case i%10 < 8:
			fmt.Fprintf(&file, "0.02\n")
		default:
			fmt.Fprintf(&file, "0.05,1e-8,1\n\n")
		}
	}
	path := writeFile(t, t.TempDir(), "workload.txt", file.String())
	all := []string{"compose", "--delta", "1e-5", "--json", "--theorem", "all"}

	want := mustSucceed(t, "", append(all, "--mech", "0.01,1e-9,500", "--mech", "0.02,0,300", "--mech", "0.05,1e-8,200")...)
	sameResults(t, "--mech-file FILE", mustSucceed(t, "", append(all, "--mech-file", path)...), want)
	sameResults(t, "--mech-file -", mustSucceed(t, file.String(), append(all, "--mech-file", "-")...), want)

	// The file combines with --mech flags.
	want = mustSucceed(t, "", append(all, "--mech", "0.01,1e-9,1000", "--mech", "0.02,0,300", "--mech", "0.05,1e-8,200")...)
	sameResults(t, "--mech-file with --mech", mustSucceed(t, "", append(all, "--mech-file", path, "--mech", "0.01,1e-9,500")...), want)
}

// sameResults compares two "--theorem all" outputs: the exact results must be identical,
// the closed forms equal to 1e-12 relative.
func sameResults(t *testing.T, name, gotOut, wantOut string) {
	t.Helper()
	got := decodeJSON(t, gotOut)["results"].([]any)
	want := decodeJSON(t, wantOut)["results"].([]any)
	for i := range want {
		g, w := got[i].(map[string]any), want[i].(map[string]any)
		if g["theorem"] != w["theorem"] || g["exact"] != w["exact"] {
			t.Errorf("%s: results[%d] = %v, want %v", name, i, g, w)
			continue
		}
		for _, key := range []string{"epsilon", "delta", "epsilon_lower"} {
			a, b := number(t, g, key), number(t, w, key)
			if w["theorem"] == "exact" && a != b || math.Abs(a-b) > 1e-12*math.Abs(b) {
				t.Errorf("%s: %v %s = %v, want %v", name, w["theorem"], key, a, b)
			}
		}
	}
}

func TestComposeTolerance(t *testing.T) {
	// Three distinct ε values are composed exactly whatever the tolerance.
	args := []string{"compose", "--mech", "0.1,0,20", "--mech", "0.3,0,5", "--mech", "0.05,1e-7,40", "--delta", "1e-5", "--json"}
	a := decodeJSON(t, mustSucceed(t, "", args...))
	b := decodeJSON(t, mustSucceed(t, "", append(args, "--tolerance", "0.01")...))
	if a["exact"] != true || number(t, a, "epsilon") != number(t, b, "epsilon") {
		t.Errorf("default tolerance %v, --tolerance 0.01 %v", a, b)
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := dir + "/" + name
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestHomogeneousDeltaNearFloor pins the reference where the floor dominates and the
// literal 1 − (1 − δ0)^k is off by a relative 4e-9 (the case FuzzComposeMech once
// flagged): 100 × (0.1, 1e-8) at ε = 6.969618783926648. The value
// 9.9999999999999872446e-7 is an mpmath evaluation of KOV Thm 3.3 at 60 digits (the
// binomial sum of docs/errata.md KOV item 1 with exact binomials).
func TestHomogeneousDeltaNearFloor(t *testing.T) {
	got := homogeneousDelta(0.1, 1e-8, 100, 6.969618783926648)
	if want := 9.9999999999999872446e-7; math.Abs(got-want) > 1e-12*want {
		t.Errorf("δ = %v, want %v within 1e-12 relative", got, want)
	}
}

// widthWithinExact reports whether a printed width is that of an exact answer: in
// (0, 1e-9] (the exact sums leave about 1e-13 between the value and its lower end).
func widthWithinExact(s string) bool {
	w, err := strconv.ParseFloat(s, 64)
	return err == nil && w > 0 && w <= 1e-9
}
