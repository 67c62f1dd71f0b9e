package main

import (
	"bufio"
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
	"github.com/dpkit/dpkit/pld"
)

// Fuzz targets for the CLI's parsers (issue 24 item 6): --mech, --mechanism and
// --mech-file. Each input must be handled within parseBound, and either be refused with
// a clear usage error (a message naming the part and its valid range, no Go zero
// values) or give an answer that an independent reading of the same text accepts.
// scripts/fuzz-targets runs them briefly; their seeds run in every plain go test.

// parseBound is the time any parser may take on one input (they are linear in it; the
// bound leaves room for a slow shared machine and the race detector).
const parseBound = 2 * time.Second

// clearError checks the shape of a refusal: a *dpkit.ParamError (name, valid range)
// whose message has no Go internals.
func clearError(t *testing.T, in string, err error) {
	t.Helper()
	var param *dpkit.ParamError
	if !errors.As(err, &param) || param.Name == "" || param.Want == "" {
		t.Fatalf("%q: error %v (%T), want a *dpkit.ParamError with a name and a valid range", in, err, err)
	}
	if msg := describe(err); strings.Contains(msg, "<nil>") && !strings.Contains(in, "<nil>") || strings.Contains(msg, "%!") && !strings.Contains(in, "%!") {
		t.Fatalf("%q: message %q", in, msg)
	}
}

// readFloat is the independent reading of a numeric part: Go's float syntax, trimmed,
// −0 read as 0.
func readFloat(s string) (float64, bool) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return v + 0, err == nil // +0 turns −0 into 0
}

// readCount is the independent reading of a count: a decimal integer, or a decimal
// number in exponent form that is exactly an integer, in [1, 10^12].
func readCount(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if k, err := strconv.ParseInt(s, 10, 64); err == nil {
		return k, k >= 1 && k <= compose.MaxCount
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789.eE+-", r) {
			return 0, false
		}
	}
	x, err := strconv.ParseFloat(s, 64)
	return int64(x), err == nil && x == math.Trunc(x) && x >= 1 && x <= compose.MaxCount
}

// checkMech is the independent check of parseMech(in) = m, err.
func checkMech(t *testing.T, in string, m compose.Mech, err error) {
	t.Helper()
	parts := strings.Split(in, ",")
	want := compose.Mech{Count: 1}
	ok := len(parts) <= 3
	if ok {
		var okE, okD, okC = true, true, true
		want.Epsilon, okE = readFloat(parts[0])
		okE = okE && want.Epsilon >= 0 && !math.IsInf(want.Epsilon, 0)
		if len(parts) > 1 {
			want.Delta, okD = readFloat(parts[1])
			okD = okD && want.Delta >= 0 && want.Delta <= 1
		}
		if len(parts) > 2 {
			want.Count, okC = readCount(parts[2])
		}
		ok = okE && okD && okC
	}
	switch {
	case ok && err != nil:
		t.Fatalf("parseMech(%q) refused a valid entry: %v", in, err)
	case !ok && err == nil:
		t.Fatalf("parseMech(%q) = %+v, want a refusal", in, m)
	case err != nil:
		clearError(t, in, err)
	case m != want || math.Signbit(m.Epsilon) || math.Signbit(m.Delta):
		t.Fatalf("parseMech(%q) = %+v, independent reading %+v", in, m, want)
	default:
		if back, err := parseMech(formatMech(m)); err != nil || back != m {
			t.Fatalf("formatMech(%+v) = %q reads back as %+v, %v", m, formatMech(m), back, err)
		}
	}
}

// FuzzParseMech: --mech EPS[,DELTA[,COUNT]].
func FuzzParseMech(f *testing.F) {
	for _, s := range []string{
		"0.1", "0.1,1e-6", "0.1,1e-6,1000", " 1 , 0.001 , 30 ", "0,0,1", "0,1,1", "-0", "1e-400", "0.1,0,1e9", "0.1,,3",
		"0x1p-3,0x1p-10,5", "1e308,1,1000000000000", "1e308,1,1e12", "1_0", "4.9e-324,5e-324",
		"", ",", ",,", ",,,,", "abc", "NaN", "inf", "inf,0", "-1", "1e400", "0.1,2", "0.1,-0.5", "0.1,nan",
		"0.1,0,0", "0.1,0,-3", "0.1,0,1.5", "0.1,0,1e3", "0.1,0,0x10", "0.1,0,1_000", "0.1,0,99999999999999999999",
		"0.1,0,1000000000001", "0.1,0,1,1", "0.1;0.2", "0.1,0,\x00", "１,0,1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		start := time.Now()
		m, err := parseMech(in)
		if d := time.Since(start); d > parseBound {
			t.Fatalf("parseMech(%q) took %v", in, d)
		}
		checkMech(t, in, m, err)
	})
}

// FuzzComposeMech runs the whole command "dpkit compose --mech IN --delta 1e-6 --json":
// a usage error (exit 2) is a JSON error naming --mech; an answer is checked against
// the exact curve of KOV Thm 3.3 written literally (homogeneousDelta) when the workload
// is small enough for it (count ≤ 200, ε ≤ 20): the answer meets 1e-6 and 0.1% less ε
// does not; an infeasible target (exit 1) must be below the floor 1 − (1 − δ)^count.
func FuzzComposeMech(f *testing.F) {
	for _, s := range []string{"1,0.001,30", "0.1,1e-9,200", "0.5", "0,0,1", "2,0.5,3", "1,x", "0.3,1e-7,1e2"} {
		f.Add(s)
	}
	const target = 1e-6
	f.Fuzz(func(t *testing.T, in string) {
		if strings.HasPrefix(strings.TrimSpace(in), "-") {
			return // would read as a flag
		}
		start := time.Now()
		r := dpkitRun(t, "", "compose", "--mech", in, "--delta", "1e-6", "--json")
		if d := time.Since(start); d > 10*parseBound {
			t.Fatalf("compose --mech %q took %v", in, d)
		}
		m, perr := parseMech(in)
		switch r.code {
		case exitUsage:
			e := checkJSONError(t, r, exitUsage, nil)
			if perr == nil && !strings.Contains(e["message"].(string), "total epsilon") {
				t.Fatalf("compose --mech %q refused a valid entry: %v", in, e)
			}
			return
		case exitFailure:
			checkJSONError(t, r, exitFailure, []string{"infeasible"})
			if floor := -math.Expm1(float64(m.Count) * math.Log1p(-m.Delta)); floor <= target*(1-1e-9) {
				t.Fatalf("compose --mech %q: infeasible, but the floor %v is below %v", in, floor, target)
			}
			return
		case exitOK:
		default:
			t.Fatalf("compose --mech %q: exit %d, %s%s", in, r.code, r.stdout, r.stderr)
		}
		if perr != nil {
			t.Fatalf("compose --mech %q answered although parseMech refuses it: %v", in, perr)
		}
		v := decodeJSON(t, r.stdout)
		eps := number(t, v, "epsilon")
		if m.Count > 200 || m.Epsilon > 20 || m.Epsilon == 0 {
			return
		}
		k := int(m.Count)
		if d := homogeneousDelta(m.Epsilon, m.Delta, k, eps); d > target*(1+1e-9) {
			t.Fatalf("compose --mech %q: ε = %v has δ = %v above %v", in, eps, d, target)
		}
		if eps > 0 {
			if d := homogeneousDelta(m.Epsilon, m.Delta, k, eps*(1-1e-3)); d <= target {
				t.Fatalf("compose --mech %q: ε = %v is not tight: %v also meets %v", in, eps, eps*(1-1e-3), target)
			}
		}
	})
}

// independentMechanism reads KIND:key=value,… without pld: the kind, the keys' values,
// and whether the text has the right shape (known kind, known keys, each once, finite
// numbers). It does not check ranges: pld's Validate, which the CLI's parser must call,
// does.
func independentMechanism(s string) (kind string, vals map[string]float64, ok bool) {
	keys := map[string]string{
		"gaussian": "sigma sensitivity count", "laplace": "scale sensitivity count", "geometric": "eps scale sensitivity count",
		"rr": "eps k count", "exponential": "eps count", "subsampled-gaussian": "sigma q sensitivity count",
		"subsampled-laplace": "scale q sensitivity count", "staircase": "eps sensitivity count cost dim",
		"jl-cut": "eps delta eta nu count", "jl-variance": "eps delta eta nu count",
	}
	kind, rest, _ := strings.Cut(strings.TrimSpace(s), ":")
	kind = strings.ToLower(strings.TrimSpace(kind))
	allowed, known := keys[kind]
	if !known {
		return kind, nil, false
	}
	vals = map[string]float64{}
	for _, kv := range strings.Split(rest, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, found := strings.Cut(kv, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if k == "cost" { // staircase's l1 or l2: not a number
			x, err = 0, nil
		}
		if k == "count" {
			c, ok := readCount(v)
			if x, err = float64(c), nil; !ok {
				return kind, nil, false
			}
		}
		if _, dup := vals[k]; !found || dup || !strings.Contains(" "+allowed+" ", " "+k+" ") || err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return kind, nil, false
		}
		vals[k] = x
	}
	return kind, vals, true
}

// checkMechanismFields compares a parsed item with the independent reading.
func checkMechanismFields(t *testing.T, in string, it pld.Item, kind string, vals map[string]float64) {
	t.Helper()
	get := func(k string, def float64) float64 {
		if v, ok := vals[k]; ok {
			return v
		}
		return def
	}
	if strings.HasPrefix(kind, "jl-") { // r = ⌈8 ln(2/ν)/η²⌉ rows of (ε0, δ/(2r)) per release
		r := math.Ceil(8 * math.Log(2/vals["nu"]) / (vals["eta"] * vals["eta"]))
		row, ok := it.Mechanism.(pld.EpsilonDelta)
		if !ok || float64(it.Count) != r*get("count", 1) || row.Delta != vals["delta"]/(2*r) || !(row.Epsilon <= vals["eps"]) {
			t.Fatalf("%q parsed as %#v × %d; the text reads as %d releases of %g rows", in, it.Mechanism, it.Count, int64(get("count", 1)), r)
		}
		return
	}
	if c := get("count", 1); float64(it.Count) != c {
		t.Fatalf("%q: count %d, text says %v", in, it.Count, c)
	}
	if kind == "staircase" {
		return // its PLD is built by package mechanism; the count and Validate are checked
	}
	sens := get("sensitivity", 1)
	mech, rate := it.Mechanism, 1.0
	if ps, ok := mech.(pld.PoissonSubsampled); ok {
		mech, rate = ps.Base, ps.Rate
	}
	if strings.HasPrefix(kind, "subsampled-") && rate != vals["q"] {
		t.Fatalf("%q: rate %v, text says q = %v", in, rate, vals["q"])
	}
	var good bool
	switch m := mech.(type) {
	case pld.Gaussian:
		good = (kind == "gaussian" || kind == "subsampled-gaussian") && m.Sigma == vals["sigma"] && m.Sensitivity == sens
	case pld.Laplace:
		good = (kind == "laplace" || kind == "subsampled-laplace") && m.Scale == vals["scale"] && m.Sensitivity == sens
	case pld.DiscreteLaplace:
		scale, hasScale := vals["scale"]
		if !hasScale {
			scale = 1 / vals["eps"]
		}
		good = kind == "geometric" && m.Scale == scale && float64(m.Sensitivity) == sens
	case pld.RandomizedResponse:
		good = kind == "rr" && m.Epsilon == vals["eps"] && float64(m.K) == vals["k"]
	case pld.Exponential:
		good = kind == "exponential" && m.Epsilon == vals["eps"]
	}
	if !good {
		t.Fatalf("%q parsed as %#v, the text reads as %s %v", in, it.Mechanism, kind, vals)
	}
}

// FuzzParseMechanism: --mechanism KIND:key=value,….
func FuzzParseMechanism(f *testing.F) {
	for _, s := range []string{"gaussian:sigma=1", "laplace:scale=2,sensitivity=3,count=4", "geometric:eps=0.5", "geometric:scale=2,sensitivity=2",
		"rr:eps=1,k=3", "subsampled-gaussian:sigma=1,q=0.5", "subsampled-laplace:scale=1,q=0.01,count=1e6", "exponential:eps=1", "x:y", ":",
		"laplace:scale=1e308", "gaussian:sigma=1,sigma=2", "rr:eps=800,k=2", "laplace:scale=1,count=1.5", "laplace:scale=1,count=1_000",
		"gaussian:sigma=1,count=0x10", "staircase:eps=1", "staircase:eps=1,count=10,cost=l1", "staircase:eps=1,dim=2,cost=l1",
		"jl-cut:eps=1,delta=1e-6,eta=0.5,nu=0.1", "jl-variance:eps=2,delta=1e-3,eta=0.9,nu=0.5,count=3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		start := time.Now()
		it, err := parseMechanism(in)
		if d := time.Since(start); d > parseBound {
			t.Fatalf("parseMechanism(%q) took %v", in, d)
		}
		kind, vals, shapeOK := independentMechanism(in)
		if err != nil {
			if msg := err.Error(); msg == "" || strings.Contains(msg, "<nil>") && !strings.Contains(in, "<nil>") || strings.Contains(msg, "%!") && !strings.Contains(in, "%!") {
				t.Fatalf("%q: message %q", in, msg)
			}
			return
		}
		if !shapeOK {
			t.Fatalf("parseMechanism(%q) = %#v, but the text is not KIND:key=value,… with known keys", in, it)
		}
		if err := it.Mechanism.Validate(); err != nil || it.Count < 1 || it.Count > pld.MaxCount {
			t.Fatalf("%q parsed to an invalid %#v × %d: %v", in, it.Mechanism, it.Count, err)
		}
		checkMechanismFields(t, in, it, kind, vals)
	})
}

// FuzzReadMechs: --mech-file contents. Every line is read as --mech reads it (after
// removing '#' comments and blank lines), and a bad line is refused naming its number.
func FuzzReadMechs(f *testing.F) {
	for _, s := range []string{"# workload\n0.1,1e-6,10\n\n0.2,0,5 # five\n", "0.1\n0.1,x\n", "\n\n", "1,0,1e3\r\n2\r\n", "0.1\x00\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		start := time.Now()
		ms, err := readMechs(context.Background(), strings.NewReader(string(data)), "f")
		if d := time.Since(start); d > parseBound {
			t.Fatalf("readMechs took %v", d)
		}
		// Independent reading: the same lines, split by bufio's rules.
		var want []compose.Mech
		badLine := 0
		sc := bufio.NewScanner(strings.NewReader(string(data)))
		sc.Buffer(nil, maxMechLine)
		for line := 1; sc.Scan(); line++ {
			text, _, _ := strings.Cut(sc.Text(), "#")
			if text = strings.TrimSpace(text); text == "" {
				continue
			}
			m, perr := parseMech(text)
			if perr != nil {
				badLine = line
				break
			}
			want = append(want, m)
		}
		switch {
		case badLine > 0:
			if err == nil || !strings.Contains(err.Error(), " line "+strconv.Itoa(badLine)+": ") {
				t.Fatalf("line %d is bad; readMechs = %v", badLine, err)
			}
		case sc.Err() != nil:
			if err == nil {
				t.Fatalf("scanner error %v; readMechs accepted", sc.Err())
			}
		case err != nil:
			t.Fatalf("readMechs refused a good file: %v", err)
		case len(ms) != len(want):
			t.Fatalf("readMechs read %d entries, want %d", len(ms), len(want))
		default:
			for i := range ms {
				if ms[i] != want[i] {
					t.Fatalf("entry %d: %+v, want %+v", i, ms[i], want[i])
				}
			}
		}
	})
}
