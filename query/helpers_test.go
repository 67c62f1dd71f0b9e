package query

import (
	"strings"
	"testing"

	"github.com/dpkit/dpkit/noise"
	"github.com/dpkit/dpkit/sensitivity"
)

// salarySchema is the lecture slides' salary table: names and salaries in [10000, 100000].
func salarySchema() Schema {
	return Schema{Columns: []Column{
		{Name: "name", Type: String},
		{Name: "dept", Type: String, Domain: []string{"eng", "ops", "hr"}},
		{Name: "salary", Type: Int, Min: 10000, Max: 100000},
		{Name: "score", Type: Float, Min: -1, Max: 1},
	}}
}

const salaryCSV = `name,dept,salary,score
Alice,eng,50000,0.5
Bob,ops,20000,-0.25
Carol,eng,150000,2
Dave,sales,30000,0
Eve,ops,5000,-1
`

func mustLoad(t testing.TB, csv string, s Schema) *Table {
	t.Helper()
	tab, err := LoadCSV(strings.NewReader(csv), s, LoadOptions{})
	if err != nil {
		t.Fatalf("LoadCSV: %v", err)
	}
	return tab
}

func mustPrepare(t testing.TB, tab *Table, sql string) *Plan {
	t.Helper()
	p, err := Prepare(tab, "t", sql, sensitivity.AddRemove)
	if err != nil {
		t.Fatalf("Prepare(%q): %v", sql, err)
	}
	return p
}

// misses counts the releases of p with options o, out of n, whose 95% interval of the
// first aggregate (of group g when grouped) does not contain its exact value.
func misses(t *testing.T, p *Plan, o ReleaseOptions, n, g int, src noise.Source) int {
	t.Helper()
	ex := p.Evaluate()
	miss := 0
	for range n {
		a, err := p.ReleaseWith(o, src)
		if err != nil {
			t.Fatal(err)
		}
		want, ci := ex.Value, a.Intervals
		if ex.Groups != nil {
			want, ci = ex.Groups[g].Value, a.Groups[g].Intervals
		}
		if want < ci[0][0] || want > ci[0][1] {
			miss++
		}
	}
	return miss
}
