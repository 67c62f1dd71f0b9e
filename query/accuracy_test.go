package query

import (
	"errors"
	"testing"

	"github.com/dpkit/dpkit"
)

// TestCostForAccuracy: the cost found meets the half-width asked for and is the
// smallest to 1e-9 (1e-8 less does not), for counts, sums, grouped counts, both noise
// families; AVG, quantiles, several aggregates and impossible widths are refused naming
// the accuracy field.
func TestCostForAccuracy(t *testing.T) {
	tab := mustLoad(t, salaryCSV, salarySchema())
	for _, c := range []struct {
		sql      string
		h        float64
		gaussian bool
	}{
		{"SELECT COUNT(*) FROM t", 10, false}, {"SELECT COUNT(*) FROM t", 10, true},
		{"SELECT SUM(salary) FROM t", 5e5, false}, {"SELECT SUM(salary) FROM t", 5e5, true},
		{"SELECT HISTOGRAM(dept) FROM t", 3, false}, {"SELECT COUNT(*) FROM t GROUP BY dept", 3, true},
		{"SELECT SUM(salary) FROM t GROUP BY dept", 1e6, false},
	} {
		p := mustPrepare(t, tab, c.sql)
		o, err := p.CostForAccuracy(c.h, c.gaussian, 0)
		if err != nil {
			t.Fatalf("%s: %v", c.sql, err)
		}
		w, _ := p.HalfWidth(o)
		cost := o.Budget.Epsilon
		less := o
		if c.gaussian {
			cost = o.Mu
			less.Mu *= 1 - 1e-8
		} else {
			less.Budget.Epsilon *= 1 - 1e-8
		}
		if w > c.h {
			t.Errorf("%s: cost %v gives ±%v > ±%v", c.sql, cost, w, c.h)
		}
		if wl, _ := p.HalfWidth(less); wl <= c.h && cost > MinAccuracyCost {
			t.Errorf("%s: cost %v is not the smallest (1e-8 less gives ±%v)", c.sql, cost, wl)
		}
		// The release at that cost reports exactly that interval.
		a, err := p.ReleaseWith(o, nil)
		if err != nil {
			t.Fatal(err)
		}
		ci := a.CI95
		if a.Result != nil && ci[1]-*a.Result != w {
			t.Errorf("%s: reported interval %v around %v, half-width %v", c.sql, ci, *a.Result, w)
		}
	}
	var pe *dpkit.ParamError
	for _, sql := range []string{"SELECT AVG(salary) FROM t", "SELECT MEDIAN(salary) FROM t", "SELECT COUNT(*), SUM(salary) FROM t"} {
		if _, err := mustPrepare(t, tab, sql).CostForAccuracy(10, false, 0); !errors.As(err, &pe) || pe.Name != "accuracy" {
			t.Errorf("%s: %v", sql, err)
		}
	}
	if _, err := mustPrepare(t, tab, "SELECT SUM(salary) FROM t").CostForAccuracy(1e-9, false, 0); !errors.As(err, &pe) || pe.Name != "accuracy.ci95_halfwidth" {
		t.Errorf("impossible width: %v", err)
	}
}
