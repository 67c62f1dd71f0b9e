package query_test

import (
	"fmt"
	"strings"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/noise"
	"github.com/dpkit/dpkit/query"
	"github.com/dpkit/dpkit/sensitivity"
)

// The lecture slides' salary table: valid salaries are [10000, 100000].
const salaries = `name,dept,salary
Alice,eng,50000
Bob,ops,20000
Carol,eng,150000
Dave,sales,30000
`

var salarySchema = query.Schema{Columns: []query.Column{
	{Name: "name", Type: query.String},
	{Name: "dept", Type: query.String, Domain: []string{"eng", "ops", "hr"}},
	{Name: "salary", Type: query.Int, Min: 10000, Max: 100000},
}}

func ExampleLoadCSV() {
	t, err := query.LoadCSV(strings.NewReader(salaries), salarySchema, query.LoadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	st := t.Stats() // for the curator only: not differentially private
	fmt.Println(t.Rows(), "rows; salaries clamped to the bounds:", st.Clamped["salary"])

	_, err = query.LoadCSV(strings.NewReader("name,dept,salary\nEve,ops,lots\n"), salarySchema, query.LoadOptions{})
	fmt.Println(err)
	// Output:
	// 4 rows; salaries clamped to the bounds: 1
	// query: csv line 2, column "salary": not an integer: "lots" (column type int)
}

func ExampleParse() {
	q, err := query.Parse("select avg(salary) from salary where dept = 'eng' or salary < 25000")
	fmt.Println(q, err)

	_, err = query.Parse("SELECT SUM(salary) FROM salary WHERE salary >")
	fmt.Println(err)
	// Output:
	// SELECT AVG(salary) FROM salary WHERE dept = 'eng' OR salary < 25000 <nil>
	// query: at offset 45: expected a number or a 'string', found end of query
}

func ExamplePrepare() {
	t, _ := query.LoadCSV(strings.NewReader(salaries), salarySchema, query.LoadOptions{})
	for _, sql := range []string{
		"SELECT COUNT(*) FROM salary",
		"SELECT SUM(salary) FROM salary",
		"SELECT AVG(salary) FROM salary",
		"SELECT HISTOGRAM(dept) FROM salary",
		"SELECT MEDIAN(salary) FROM salary",
	} {
		p, err := query.Prepare(t, "salary", sql, sensitivity.AddRemove)
		if err != nil {
			fmt.Println(err)
			continue
		}
		for _, c := range p.Components {
			fmt.Printf("%-36s %-22s ℓ1 = %.6g, share %g\n", sql, c.Quantity, c.L1, c.Share)
		}
	}
	_, err := query.Prepare(t, "salary", "SELECT SUM(name) FROM salary", sensitivity.AddRemove)
	fmt.Println(err)
	// name has no declared domain: its keys are released by partition selection.
	p, _ := query.Prepare(t, "salary", "SELECT COUNT(*) FROM salary GROUP BY name", sensitivity.AddRemove)
	fmt.Println("GROUP BY name: partition selection", p.Selection, "with share", p.SelectionShare)
	// Output:
	// SELECT COUNT(*) FROM salary          COUNT(*)               ℓ1 = 1, share 1
	// SELECT SUM(salary) FROM salary       SUM(salary)            ℓ1 = 100000, share 1
	// SELECT AVG(salary) FROM salary       SUM(salary − 55000)    ℓ1 = 45000.2, share 0.5
	// SELECT AVG(salary) FROM salary       COUNT(*)               ℓ1 = 1, share 0.5
	// SELECT HISTOGRAM(dept) FROM salary   COUNT(*)               ℓ1 = 1, share 1
	// SELECT MEDIAN(salary) FROM salary    rank utility           ℓ1 = 1, share 1
	// query: at offset 11: SUM needs a numeric column; name is a string column
	// GROUP BY name: partition selection true with share 0.5
}

func ExamplePlan_Evaluate() {
	t, _ := query.LoadCSV(strings.NewReader(salaries), salarySchema, query.LoadOptions{})
	p, _ := query.Prepare(t, "salary", "SELECT SUM(salary) FROM salary GROUP BY dept", sensitivity.AddRemove)
	for _, g := range p.Evaluate().Groups { // exact: NOT private
		fmt.Println(g.Key, g.Value)
	}
	// Output:
	// eng 150000
	// ops 20000
	// hr 0
}

func ExamplePlan_Release() {
	t, _ := query.LoadCSV(strings.NewReader(salaries), salarySchema, query.LoadOptions{})
	p, _ := query.Prepare(t, "salary", "SELECT COUNT(*) FROM salary WHERE salary > 40000", sensitivity.AddRemove)
	// Production code passes nil (a cryptographic source); a seed is for tests.
	a, err := p.Release(dpkit.Budget{Epsilon: 0.5}, noise.Seeded(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s, scale %g, CI95 width %g, charged %v\n", a.Mechanism, a.Scale, a.CI95[1]-a.CI95[0], a.Charged)
	// Output:
	// discrete laplace, scale 2, CI95 width 12, charged (ε=0.5, δ=0)
}
