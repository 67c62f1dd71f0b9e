package query

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/noise"
	"github.com/dpkit/dpkit/sensitivity"
	"gonum.org/v1/gonum/stat/distuv"
)

func TestLoadClampsToDeclaredBounds(t *testing.T) {
	tab := mustLoad(t, salaryCSV, salarySchema())
	if tab.Rows() != 5 {
		t.Fatalf("Rows = %d, want 5", tab.Rows())
	}
	sal := tab.cols[2].ints
	want := []int64{50000, 20000, 100000, 30000, 10000} // 150000 → 100000, 5000 → 10000
	for i := range want {
		if sal[i] != want[i] {
			t.Errorf("salary[%d] = %d, want %d", i, sal[i], want[i])
		}
	}
	score := tab.cols[3].floats
	for i, w := range []float64{0.5, -0.25, 1, 0, -1} { // 2 → 1
		if score[i] != w {
			t.Errorf("score[%d] = %g, want %g", i, score[i], w)
		}
	}
	st := tab.Stats()
	if st.Clamped["salary"] != 2 || st.Clamped["score"] != 1 || st.Lines != 5 || st.Dropped != 0 {
		t.Errorf("Stats = %+v", st)
	}
}

func TestLoadFloatGrid(t *testing.T) {
	// Bounds [0, 3]: γ = 2^(2−40); 0.1 is rounded to the nearest multiple of γ.
	s := Schema{Columns: []Column{{Name: "x", Type: Float, Min: 0, Max: 3}}}
	tab := mustLoad(t, "x\n0.1\n3\n1e999\n-1e999\n", s)
	g := math.Ldexp(1, -38)
	if tab.cols[0].grid != g {
		t.Fatalf("grid = %g, want 2^-38", tab.cols[0].grid)
	}
	want := []float64{math.Round(0.1/g) * g, 3, 3, 0}
	for i, w := range want {
		if v := tab.cols[0].floats[i]; v != w {
			t.Errorf("x[%d] = %v, want %v", i, v, w)
		}
	}
	if d := math.Abs(tab.cols[0].floats[0] - 0.1); d > g/2 {
		t.Errorf("0.1 moved by %g > γ/2", d)
	}
}

func TestLoadErrors(t *testing.T) {
	s := salarySchema()
	for _, tc := range []struct {
		csv  string
		line int
		col  string
		want string
	}{
		{"", 1, "", "empty input"},
		{"name,dept,score\n", 1, "salary", "missing from the header"},
		{"name,dept,salary,score,Salary\n", 1, "salary", "twice"},
		{"name,dept,salary,score\na,eng,1x,0\n", 2, "salary", "not an integer"},
		{"name,dept,salary,score\na,eng,1,0\nb,eng,2.5,0\n", 3, "salary", "not an integer"},
		{"name,dept,salary,score\na,eng,,0\n", 2, "salary", "empty value"},
		{"name,dept,salary,score\na,eng,99999999999999999999,0\n", 2, "salary", "64-bit range"},
		{"name,dept,salary,score\na,eng,1,NaN\n", 2, "score", "not a finite number"},
		{"name,dept,salary,score\na,eng,1,inf\n", 2, "score", "not a finite number"},
		{"name,dept,salary,score\na,eng,1,zero\n", 2, "score", "not a number"},
		{"name,dept,salary,score\na,eng,1,0\nb,eng,1\n", 3, "", "wrong number of fields"},
		{"name,dept,salary,score\na,eng,1,0\n\"b,eng,1,0\n", 3, "", "extraneous or missing \" in quoted-field"},
		{"name,dept,salary,score\na,eng,1,0\n\"multi\nline\",eng,x,0\n", 4, "salary", "not an integer"},
	} {
		_, err := LoadCSV(strings.NewReader(tc.csv), s, LoadOptions{})
		var ce *CSVError
		if !errors.As(err, &ce) {
			t.Errorf("LoadCSV(%q) = %v, want *CSVError", tc.csv, err)
			continue
		}
		if ce.Line != tc.line || ce.Column != tc.col || !strings.Contains(ce.Msg, tc.want) {
			t.Errorf("LoadCSV(%q): line %d column %q %q; want line %d column %q containing %q",
				tc.csv, ce.Line, ce.Column, ce.Msg, tc.line, tc.col, tc.want)
		}
	}
}

func TestLoadAcceptsSpacesAndBOM(t *testing.T) {
	s := Schema{Columns: []Column{{Name: "a", Type: Int, Min: 0, Max: 10}, {Name: "b", Type: Float, Min: 0, Max: 1}}}
	tab := mustLoad(t, "\ufeffA , b,ignored\n 3 ,0.5 ,zzz\n", s)
	if tab.cols[0].ints[0] != 3 || tab.cols[1].floats[0] != 0.5 {
		t.Errorf("got %v %v", tab.cols[0].ints, tab.cols[1].floats)
	}
}

func TestSchemaValidate(t *testing.T) {
	ok := Column{Name: "x", Type: Int, Min: 0, Max: 1}
	for _, tc := range []struct {
		s    Schema
		name string
	}{
		{Schema{}, "columns"},
		{Schema{Columns: []Column{{Name: "1x", Type: Int, Min: 0, Max: 1}}}, "columns[0].name"},
		{Schema{Columns: []Column{{Name: "where", Type: Int, Min: 0, Max: 1}}}, "columns[0].name"},
		{Schema{Columns: []Column{ok, {Name: "X", Type: String}}}, "columns[1].name"},
		{Schema{Columns: []Column{{Name: "x", Type: Int, Min: math.NaN(), Max: 1}}}, "columns[x].min"},
		{Schema{Columns: []Column{{Name: "x", Type: Float, Min: 0, Max: math.Inf(1)}}}, "columns[x].max"},
		{Schema{Columns: []Column{{Name: "x", Type: Int, Min: 0.5, Max: 1}}}, "columns[x].min"},
		{Schema{Columns: []Column{{Name: "x", Type: Int, Min: 0, Max: 1 << 54}}}, "columns[x].max"},
		{Schema{Columns: []Column{{Name: "x", Type: Int, Min: 1, Max: 1}}}, "columns[x].max"},
		{Schema{Columns: []Column{{Name: "x", Type: Float, Min: 1e6 + 0.1, Max: 1e6 + 0.1 + 1e-9}}}, "columns[x].max"},
		{Schema{Columns: []Column{{Name: "x", Type: Float, Min: 0, Max: 1e-300}}}, "columns[x].max"},
		{Schema{Columns: []Column{{Name: "x", Type: Float, Min: 0, Max: 1, Domain: []string{"0"}}}}, "columns[x].domain"},
		{Schema{Columns: []Column{{Name: "x", Type: String, Max: 1}}}, "columns[x].min"},
		{Schema{Columns: []Column{{Name: "x", Type: 7}}}, "columns[x].type"},
		{Schema{Columns: []Column{{Name: "x", Type: Int, Min: 0, Max: 1, Domain: []string{"0", "2"}}}}, "columns[x].domain[1]"},
		{Schema{Columns: []Column{{Name: "x", Type: Int, Min: 0, Max: 1, Domain: []string{"0", "a"}}}}, "columns[x].domain[1]"},
		{Schema{Columns: []Column{{Name: "x", Type: Int, Min: 0, Max: 1, Domain: []string{"1", "01"}}}}, "columns[x].domain[1]"},
		{Schema{Columns: []Column{{Name: "x", Type: String, Domain: []string{"a", "a"}}}}, "columns[x].domain[1]"},
		{Schema{Columns: []Column{ok}, Unit: &PrivacyUnit{Column: "y", MaxRows: 1}}, "privacy_unit.column"},
		{Schema{Columns: []Column{ok}, Unit: &PrivacyUnit{Column: "x", MaxRows: 0}}, "privacy_unit.max_rows"},
		{Schema{Columns: []Column{ok}, Unit: &PrivacyUnit{Column: "x", MaxRows: 1 << 21}}, "privacy_unit.max_rows"},
	} {
		err := tc.s.Validate()
		var pe *dpkit.ParamError
		if !errors.As(err, &pe) || pe.Name != tc.name {
			t.Errorf("Validate(%+v) = %v, want *dpkit.ParamError on %s", tc.s, err, tc.name)
		}
		if _, err := LoadCSV(strings.NewReader("x\n"), tc.s, LoadOptions{}); !errors.As(err, &pe) {
			t.Errorf("LoadCSV with schema %+v = %v, want the same *dpkit.ParamError", tc.s, err)
		}
	}
}

func unitSchema(maxRows int) Schema {
	return Schema{
		Columns: []Column{{Name: "uid", Type: String}, {Name: "v", Type: Int, Min: 0, Max: 100}},
		Unit:    &PrivacyUnit{Column: "uid", MaxRows: maxRows},
	}
}

func TestContributionBoundingFirstRows(t *testing.T) {
	csv := "uid,v\na,1\nb,2\na,3\na,4\nc,5\nb,6\na,7\n"
	tab := mustLoad(t, csv, unitSchema(2))
	got := tab.cols[1].ints
	want := []int64{1, 2, 3, 5, 6} // a keeps 1, 3; b keeps 2, 6; c keeps 5
	if len(got) != len(want) {
		t.Fatalf("kept %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("kept %v, want %v", got, want)
		}
	}
	if st := tab.Stats(); st.Dropped != 2 || st.Rows != 5 || st.Lines != 7 {
		t.Errorf("Stats = %+v", st)
	}
}

// TestContributionBoundingRandom checks that the random choice keeps exactly MaxRows rows
// of a unit, in file order, and that each of the C(5,2) = 10 subsets of a 5-row unit is
// chosen with probability 1/10: a χ² test with 9 degrees of freedom over 20000 seeded
// loads, rejecting at the 1 − 10^-6 quantile (false-rejection probability 10^-6).
func TestContributionBoundingRandom(t *testing.T) {
	csv := "uid,v\nx,9\na,0\na,1\na,2\na,3\na,4\ny,8\n"
	const trials = 20000
	counts := map[[2]int64]int{}
	src := noise.Seeded(1)
	for range trials {
		tab, err := LoadCSV(strings.NewReader(csv), unitSchema(2), LoadOptions{Source: src})
		if err != nil {
			t.Fatal(err)
		}
		v := tab.cols[1].ints
		if len(v) != 4 || v[0] != 9 || v[3] != 8 || v[1] >= v[2] {
			t.Fatalf("kept %v: want x's row, two of a's in order, y's row", v)
		}
		counts[[2]int64{v[1], v[2]}]++
	}
	if len(counts) != 10 {
		t.Fatalf("saw %d subsets, want 10", len(counts))
	}
	chi2 := 0.0
	for _, c := range counts {
		d := float64(c) - trials/10.0
		chi2 += d * d / (trials / 10.0)
	}
	crit := distuv.ChiSquared{K: 9}.Quantile(1 - 1e-6)
	if chi2 > crit {
		t.Errorf("χ² = %.1f > %.1f: subsets not uniform: %v", chi2, crit, counts)
	}
}

func TestUnitKeyIsRawValue(t *testing.T) {
	// An Int unit column: units are told apart by their value before clamping, and
	// "01" and "1" are the same unit.
	s := Schema{
		Columns: []Column{{Name: "uid", Type: Int, Min: 0, Max: 5}, {Name: "v", Type: Int, Min: 0, Max: 9}},
		Unit:    &PrivacyUnit{Column: "uid", MaxRows: 1},
	}
	tab := mustLoad(t, "uid,v\n1,1\n01,2\n100,3\n200,4\n", s)
	if got := tab.cols[1].ints; len(got) != 3 || got[0] != 1 || got[1] != 3 || got[2] != 4 {
		t.Errorf("kept %v, want [1 3 4]", got)
	}
}

// FuzzLoadCSV: any input either loads or fails with a *CSVError naming a line ≥ 1; a
// loaded table keeps every numeric value inside its bounds (floats on their grid), at
// most MaxRows rows per unit (first-rows and random selection alike), and its statistics
// add up (rows kept + rows dropped = lines; COUNT(*) = rows).
func FuzzLoadCSV(f *testing.F) {
	for _, seed := range []string{
		"u,g,x,y\n1,a,5,0.5\n1,b,7,-3\n2,a,100,2.5\n1,a,1,1\n",
		"u,g,x,y\n\"1\",\"a,b\",-9,1e999\n3,c,x,0\n",
		"\ufeffU,G,X,Y,extra\n1,a,1,1,z\n",
		"u,g,x\n1,a,1\n",
		"u,g,x,y\n1,a,1,NaN\n",
		"u,g,x,y\n1,a,9223372036854775808,0\n",
		"",
		"u,g,x,y\n\"unterminated,a,1,1\n",
		"u,u,g,x,y\n1,1,a,1,1\n",
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	s := Schema{
		Columns: []Column{
			{Name: "u", Type: Int, Min: -1000, Max: 1000},
			{Name: "g", Type: String, Domain: []string{"a", "b"}},
			{Name: "x", Type: Int, Min: -10, Max: 10},
			{Name: "y", Type: Float, Min: -2, Max: 2},
		},
		Unit: &PrivacyUnit{Column: "u", MaxRows: 2},
	}
	f.Fuzz(func(t *testing.T, text string, random bool) {
		var opt LoadOptions
		if random {
			opt.Source = noise.Seeded(uint64(len(text)))
		}
		tab, err := LoadCSV(strings.NewReader(text), s, opt)
		if err != nil {
			var ce *CSVError
			if !errors.As(err, &ce) || ce.Line < 1 {
				t.Fatalf("error %v: want a *CSVError with a line", err)
			}
			return
		}
		st := tab.Stats()
		if st.Rows != tab.Rows() || st.Rows+st.Dropped != st.Lines {
			t.Fatalf("stats %+v with %d rows", st, tab.Rows())
		}
		perUnit := map[int64]int{}
		for i := range tab.Rows() {
			perUnit[tab.cols[0].ints[i]]++
			if x := tab.cols[2].ints[i]; x < -10 || x > 10 {
				t.Fatalf("x = %d outside [-10, 10]", x)
			}
			if y := tab.cols[3].floats[i]; y < -2 || y > 2 || y/tab.cols[3].grid != math.Trunc(y/tab.cols[3].grid) {
				t.Fatalf("y = %v outside [-2, 2] or off its grid", y)
			}
		}
		for u, n := range perUnit {
			// Units are identified by their raw value before clamping; clamped ids may merge
			// only for |u| > 1000, and the raw ids are what MaxRows bounds.
			if n > 2 && u > -1000 && u < 1000 {
				t.Fatalf("unit %d keeps %d rows > MaxRows = 2", u, n)
			}
		}
		p, err := Prepare(tab, "t", "SELECT COUNT(*) FROM t", sensitivity.AddRemove)
		if err != nil {
			t.Fatal(err)
		}
		if v := p.Evaluate().Value; v != float64(tab.Rows()) {
			t.Fatalf("COUNT(*) = %v, rows %d", v, tab.Rows())
		}
	})
}
