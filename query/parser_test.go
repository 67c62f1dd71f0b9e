package query

import (
	"errors"
	"strings"
	"testing"
)

func TestParseCanonical(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"SELECT COUNT(*) FROM flu", "SELECT COUNT(*) FROM flu"},
		{"  select   count ( * )   from flu ; ", "SELECT COUNT(*) FROM flu"},
		{"SELECT sum(salary) FROM t WHERE salary >= 10 AND name <> 'O''Brien'",
			"SELECT SUM(salary) FROM t WHERE salary >= 10 AND name != 'O''Brien'"},
		{"SELECT AVG(x) FROM t WHERE a = 1 OR b = 2 AND c = 3", "SELECT AVG(x) FROM t WHERE a = 1 OR b = 2 AND c = 3"},
		{"SELECT AVG(x) FROM t WHERE (a = 1 OR b = 2) AND c = 3", "SELECT AVG(x) FROM t WHERE (a = 1 OR b = 2) AND c = 3"},
		{"SELECT AVG(x) FROM t WHERE ((a = 1) AND (b = 2)) AND c = 3", "SELECT AVG(x) FROM t WHERE a = 1 AND b = 2 AND c = 3"},
		{"SELECT MEDIAN(x) FROM t GROUP BY g", "SELECT MEDIAN(x) FROM t GROUP BY g"},
		{"SELECT QUANTILE(x, 0.9) FROM t", "SELECT QUANTILE(x, 0.9) FROM t"},
		{"SELECT QUANTILE(x, 0.999) FROM t", "SELECT QUANTILE(x, 0.999) FROM t"},
		{"select count(*),sum(x), quantile(y,0.5) from t group by a,b", "SELECT COUNT(*), SUM(x), QUANTILE(y, 0.5) FROM t GROUP BY a, b"},
		{"SELECT histogram(g) FROM t -- comment\n", "SELECT HISTOGRAM(g) FROM t"},
		{"SELECT COUNT(*) FROM t WHERE 5 < x", "SELECT COUNT(*) FROM t WHERE x > 5"},
		{"SELECT COUNT(*) FROM t WHERE x>-3.5e2", "SELECT COUNT(*) FROM t WHERE x > -3.5e2"},
		{`SELECT COUNT(*) FROM "select" WHERE "from" = 'a'`, `SELECT COUNT(*) FROM "select" WHERE "from" = 'a'`},
		{"SELECT SUM(count) FROM t", "SELECT SUM(count) FROM t"}, // aggregate names are not reserved
	} {
		q, err := Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if got := q.String(); got != tc.want {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.in, got, tc.want)
		}
		q2, err := Parse(q.String())
		if err != nil || q2.String() != q.String() {
			t.Errorf("reparse of %q: %v, %v", q.String(), q2, err)
		}
	}
}

func TestParsePrecedence(t *testing.T) {
	q, err := Parse("SELECT COUNT(*) FROM t WHERE a = 1 OR b = 2 AND c = 3 OR d = 4")
	if err != nil {
		t.Fatal(err)
	}
	or, ok := q.Where.(*Logic)
	if !ok || or.Op != "OR" || len(or.Terms) != 3 {
		t.Fatalf("top = %#v, want OR of 3 terms", q.Where)
	}
	and, ok := or.Terms[1].(*Logic)
	if !ok || and.Op != "AND" || len(and.Terms) != 2 {
		t.Fatalf("middle term = %#v, want AND of 2", or.Terms[1])
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		pos  int
		want string
	}{
		{"", 0, "expected SELECT, found end of query"},
		{"SELEC COUNT(*) FROM t", 0, "expected SELECT"},
		{"SELECT COUNTS(*) FROM t", 7, "expected an aggregate"},
		{"SELECT COUNT(x) FROM t", 13, `expected "*"`},
		{"SELECT COUNT(* FROM t", 15, `expected ")"`},
		{"SELECT SUM() FROM t", 11, "expected a column name"},
		{"SELECT SUM(x) t", 14, "expected FROM, found identifier t"},
		{"SELECT SUM(x) FROM", 18, "expected a table name, found end of query"},
		{"SELECT SUM(x) FROM t WHERE", 26, "expected a condition"},
		{"SELECT SUM(x) FROM t WHERE x", 28, "expected a comparison operator"},
		{"SELECT SUM(x) FROM t WHERE x = ", 31, "expected a number or a 'string'"},
		{"SELECT SUM(x) FROM t WHERE x = y", 31, "expected a number or a 'string', found identifier y"},
		{"SELECT SUM(x) FROM t WHERE x = 'abc", 31, "unterminated string literal"},
		{"SELECT SUM(x) FROM t WHERE x ! 3", 29, `did you mean "!="`},
		{"SELECT SUM(x) FROM t WHERE x = 1 AND", 36, "expected a condition"},
		{"SELECT SUM(x) FROM t WHERE (x = 1", 33, `expected ")", AND or OR`},
		{"SELECT SUM(x) FROM t WHERE x = 1)", 32, "expected AND, OR, GROUP BY or end of query"},
		{"SELECT SUM(x) FROM t GROUP x", 27, "expected BY"},
		{"SELECT SUM(x) FROM t GROUP BY", 29, "expected a column name"},
		{"SELECT SUM(x) FROM t GROUP BY g extra", 32, "expected \",\" or end of query"},
		{"SELECT SUM(x) FROM t LIMIT 3", 21, "expected WHERE, GROUP BY or end of query"},
		{"SELECT QUANTILE(x) FROM t", 17, `expected "," and a quantile`},
		{"SELECT QUANTILE(x, 1.5) FROM t", 19, "expected a quantile p in (0, 1), found 1.5"},
		{"SELECT QUANTILE(x, -0.1) FROM t", 19, "expected a quantile p in (0, 1)"},
		{"SELECT QUANTILE(x, 1) FROM t", 19, "expected a quantile p in (0, 1)"},
		{"SELECT QUANTILE(x, 0) FROM t", 19, "expected a quantile p in (0, 1)"},
		{"SELECT COUNT(*), FROM t", 17, "expected an aggregate"},
		{"SELECT COUNT(*) FROM t GROUP BY a,", 34, "expected a column name"},
		{"SELECT SUM(x) FROM t WHERE x = 1e999", 31, "out of range"},
		{"SELECT SUM(x) FROM t WHERE x = 1 AND select = 2", 37, "expected a condition"},
		{"SELECT SUM(x) FROM t WHERE x = 1 # 2", 33, "unexpected character '#'"},
		{"SELECT SUM(é) FROM t", 11, "non-ASCII"},
		{`SELECT SUM("x) FROM t`, 11, "unterminated quoted identifier"},
		{"SELECT SUM(x) FROM t; SELECT", 22, "expected end of query"},
		{"SELECT SUM(x) FROM t WHERE " + strings.Repeat("(", 100) + "x = 1", 27 + 64, "nested deeper"},
	} {
		_, err := Parse(tc.sql)
		var qe *Error
		if !errors.As(err, &qe) {
			t.Errorf("Parse(%q) = %v, want *Error", tc.sql, err)
			continue
		}
		if qe.Pos != tc.pos || !strings.Contains(qe.Msg, tc.want) {
			t.Errorf("Parse(%q): error at %d %q, want at %d containing %q", tc.sql, qe.Pos, qe.Msg, tc.pos, tc.want)
		}
	}
}

// FuzzParse checks that Parse never panics, that every error is an *Error positioned
// inside the query (or at its end), and that an accepted query prints to a canonical form
// that parses back to itself. The seeds run under plain go test.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"SELECT COUNT(*) FROM t",
		"SELECT SUM(salary) FROM salary WHERE salary >= 10 AND name <> 'O''Brien' GROUP BY dept",
		"SELECT QUANTILE(x, 0.25) FROM t WHERE (a = 1 OR b < -2.5e3) AND c != 'x';",
		"select histogram(\"g\") from \"t\" -- c",
		"SELECT AVG(x) FROM t WHERE 3 <= x OR x = .5",
		"SELECT", "'", "\"", "((((", "SELECT SUM(x) FROM t WHERE x = 1e999", "\xff\xfe",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		q, err := Parse(sql)
		if err != nil {
			var qe *Error
			if !errors.As(err, &qe) || qe.Pos < 0 || qe.Pos > len(sql) {
				t.Fatalf("Parse(%q): error %v (want *Error with 0 ≤ Pos ≤ %d)", sql, err, len(sql))
			}
			return
		}
		s := q.String()
		q2, err := Parse(s)
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", s, sql, err)
		}
		if s2 := q2.String(); s2 != s {
			t.Fatalf("canonical form not stable: %q → %q", s, s2)
		}
	})
}
