package query_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/dpkit/dpkit/query"
	"github.com/dpkit/dpkit/sensitivity"
)

// One plan, two executors: the exact statistics of a plan on the table in memory (with a
// fixed seed for contribution bounding), and the one SQL statement the same plan runs
// inside a database (package query/pushdown runs it on PostgreSQL and decodes its rows
// into the same statistics).
func ExamplePlan_Collect() {
	schema := query.Schema{Columns: []query.Column{
		{Name: "dept", Type: query.String, Domain: []string{"eng", "ops"}},
		{Name: "salary", Type: query.Int, Min: 10000, Max: 100000},
	}}
	csv := "dept,salary\neng,50000\nops,20000\neng,150000\nhr,30000\nops,\n"
	t, err := query.LoadCSV(strings.NewReader(csv), schema, query.LoadOptions{Nulls: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := query.PrepareSchema(schema, "pay", "SELECT COUNT(*), AVG(salary) FROM pay GROUP BY dept", sensitivity.AddRemove)
	if err != nil {
		fmt.Println(err)
		return
	}
	groups, err := p.Collect(context.Background(), t, query.Seed{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, g := range groups {
		fmt.Println(g) // 150000 clamped to 100000; ops's NULL salary counted by COUNT(*) only
	}
	// Output:
	// ["eng"] rows=2 units=0 | n=0 | n=2 sum=150000
	// ["ops"] rows=2 units=0 | n=0 | n=1 sum=20000
}

// The statement of a plan without a privacy unit (each row a person): clamping, the
// grid, WHERE on the raw column and the domain, no window function; every value a
// parameter.
func ExamplePlan_Compile() {
	schema := query.Schema{Columns: []query.Column{
		{Name: "dept", Type: query.String, Domain: []string{"eng", "ops"}},
		{Name: "salary", Type: query.Int, Min: 10000, Max: 100000},
	}}
	p, err := query.PrepareSchema(schema, "pay", "SELECT SUM(salary) FROM pay WHERE salary > 40000 GROUP BY dept", sensitivity.AddRemove)
	if err != nil {
		fmt.Println(err)
		return
	}
	st, err := p.Compile(query.SQLTable{Name: []string{"hr", "pay"}}, query.Seed{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(strings.ReplaceAll(st.SQL, " FROM ", "\nFROM "))
	fmt.Println(st.Args...)
	// Output:
	// SELECT CAST(c0 AS text), CAST(COUNT(*) AS text), CAST(0 AS text), CAST(COUNT(n1) AS text), CAST(COALESCE(SUM(c1), 0) AS text)
	// FROM (SELECT COALESCE(CAST("dept" AS text), '') AS c0, CASE WHEN CAST("salary" AS bigint) < CAST($1 AS bigint) THEN CAST($1 AS bigint) WHEN CAST("salary" AS bigint) > CAST($2 AS bigint) THEN CAST($2 AS bigint) ELSE CAST("salary" AS bigint) END AS c1, "salary" AS n1
	// FROM "hr"."pay" WHERE ("salary" >= CAST($3 AS bigint)) AND "dept" = ANY(CAST($4 AS text[]))) AS r GROUP BY c0
	// 10000 100000 40001 [eng ops]
}
