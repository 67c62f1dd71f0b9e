package query

import (
	"strings"
	"testing"

	"github.com/dpkit/dpkit/sensitivity"
)

// FuzzCompile: no text of a query reaches the SQL statement but through its parameters,
// and the table's and columns' names only as quoted identifiers. For any string literal
// and any names, the statement is the one written for a fixed literal and fixed names,
// once their quoted identifiers are replaced: the literal went into Args, as it was.
func FuzzCompile(f *testing.F) {
	f.Add("eng", "pay", "dept")
	f.Add("x'); DROP TABLE pay; --", `pay"; DROP TABLE pay; --`, `de"pt`)
	f.Add("\x00é\n", "a.b", "salary")
	f.Fuzz(func(t *testing.T, lit, table, column string) {
		if lit == "" || strings.ContainsRune(table, 0) || strings.ContainsRune(column, 0) {
			t.Skip() // '' is written as a constant; NUL is dropped from names
		}
		for _, other := range []string{"uid", "salary", "C", table} { // "C": the collation
			if strings.Contains(quoteSQLIdent(other), quoteSQLIdent(column)) || strings.Contains(quoteSQLIdent(column), quoteSQLIdent(other)) && other != table {
				t.Skip() // the replacement below could not tell the names apart
			}
		}
		if strings.Contains(quoteSQLIdent(column), quoteSQLIdent(table)) || strings.Contains(`"uid" "salary" "C"`, quoteSQLIdent(table)) {
			t.Skip()
		}
		compile := func(lit, table, column string) (*Statement, string) {
			schema := Schema{Columns: []Column{
				{Name: "dept", Type: String, Domain: []string{"eng", "ops", lit}},
				{Name: "uid", Type: String},
				{Name: "salary", Type: Int, Min: 0, Max: 100},
			}, Unit: &PrivacyUnit{Column: "uid", MaxRows: 2, MaxGroups: 1}}
			sql := "SELECT COUNT(*), SUM(salary) FROM t WHERE dept = '" + strings.ReplaceAll(lit, "'", "''") + "' OR dept > '" +
				strings.ReplaceAll(lit, "'", "''") + "' GROUP BY dept"
			p, err := PrepareSchema(schema, "t", sql, sensitivity.AddRemove)
			if err != nil {
				t.Skip() // e.g. a literal equal to another domain value
			}
			st, err := p.Compile(SQLTable{Name: []string{table}, Columns: []SQLColumn{{Name: column}, {Name: "uid"}, {Name: "salary"}}}, Seed{})
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			return st, strings.NewReplacer(quoteSQLIdent(table), `"T"`, quoteSQLIdent(column), `"K"`).Replace(st.SQL)
		}
		st, got := compile(lit, table, column)
		_, want := compile("L", "T", "K")
		if got != want {
			t.Fatalf("the statement depends on the text:\n%s\n%s", got, want)
		}
		found := 0
		for _, a := range st.Args {
			if a == lit {
				found++
			}
		}
		if found != 2 {
			t.Fatalf("the literal %q is %d times in the parameters %v, want 2", lit, found, st.Args)
		}
	})
}
