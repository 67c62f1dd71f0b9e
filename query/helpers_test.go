package query

import (
	"strings"
	"testing"

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
