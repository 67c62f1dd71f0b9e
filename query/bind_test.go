package query

import (
	"errors"
	"strings"
	"testing"

	"github.com/dpkit/dpkit/sensitivity"
)

func TestPrepareSchemaErrors(t *testing.T) {
	tab := mustLoad(t, salaryCSV, salarySchema())
	for _, tc := range []struct {
		sql  string
		pos  int
		want string
	}{
		{"SELECT COUNT(*) FROM other", 21, "unknown table other"},
		{"SELECT SUM(wage) FROM t", 11, "unknown column wage"},
		{"SELECT SUM(name) FROM t", 11, "SUM needs a numeric column"},
		{"SELECT MEDIAN(dept) FROM t", 14, "MEDIAN needs a numeric column"},
		{"SELECT HISTOGRAM(salary) FROM t", 17, "HISTOGRAM needs a column with a declared domain"},
		{"SELECT HISTOGRAM(dept) FROM t GROUP BY dept", 39, "cannot be combined with GROUP BY"},
		{"SELECT COUNT(*) FROM t GROUP BY score", 32, "GROUP BY on a float column (score)"},
		{"SELECT COUNT(*) FROM t GROUP BY dept, dept", 38, "dept appears twice in GROUP BY"},
		{"SELECT COUNT(*), HISTOGRAM(dept) FROM t", 17, "HISTOGRAM must be the only aggregate"},
		{"SELECT COUNT(*) FROM t GROUP BY nope", 32, "unknown column nope"},
		{"SELECT COUNT(*) FROM t WHERE salary > 1 AND nope = 2", 44, "unknown column nope"},
		{"SELECT COUNT(*) FROM t WHERE salary = 'high'", 38, "salary is a int column: compare it with a number"},
		{"SELECT COUNT(*) FROM t WHERE dept = 3", 36, "dept is a string column: compare it with a 'string'"},
		{"SELECT COUNT(*) FROM t WHERE (", 30, "expected a condition"},
	} {
		_, err := Prepare(tab, "t", tc.sql, sensitivity.AddRemove)
		var qe *Error
		if !errors.As(err, &qe) || qe.Pos != tc.pos || !strings.Contains(qe.Msg, tc.want) {
			t.Errorf("Prepare(%q) = %v; want *Error at %d containing %q", tc.sql, err, tc.pos, tc.want)
		}
	}
	// Table and column names are case-insensitive, as keywords are.
	if _, err := Prepare(tab, "t", "SELECT SUM(SALARY) FROM T WHERE Dept = 'eng' GROUP BY DEPT", sensitivity.AddRemove); err != nil {
		t.Errorf("case-insensitive names: %v", err)
	}
}
