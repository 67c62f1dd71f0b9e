package query_test

import (
	"fmt"
	"strings"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/noise"
	"github.com/dpkit/dpkit/query"
	"github.com/dpkit/dpkit/sensitivity"
)

// visits: one row per visit; a person (id) may have up to 4 visits in 2 cities, at most
// 2 visits in each; the cities are not declared (partition selection).
var visitSchema = query.Schema{
	Columns: []query.Column{
		{Name: "id", Type: query.String},
		{Name: "dept", Type: query.String, Domain: []string{"eng", "ops"}},
		{Name: "city", Type: query.String},
		{Name: "days", Type: query.Int, Min: 0, Max: 30},
	},
	Unit: &query.PrivacyUnit{Column: "id", MaxRows: 4, MaxGroups: 2, MaxRowsPerGroup: 2},
}

func visits() *query.Table {
	var b strings.Builder
	b.WriteString("id,dept,city,days\n")
	for i := range 3000 {
		city := []string{"paris", "lyon", "nice"}[i%3]
		dept := []string{"eng", "ops"}[i%2]
		fmt.Fprintf(&b, "p%d,%s,%s,%d\n", i, dept, city, i%31)
		fmt.Fprintf(&b, "p%d,%s,%s,%d\n", i, dept, city, (i+7)%31)
	}
	b.WriteString("loner,eng,brest,3\n")
	t, err := query.LoadCSV(strings.NewReader(b.String()), visitSchema, query.LoadOptions{})
	if err != nil {
		panic(err)
	}
	return t
}

// Several aggregates over declared groups: each aggregate gets an equal share of the
// cost (AVG halves its own); ℓ1 and ℓ2 come from the privacy unit's bounds.
func ExamplePlan_Mechanisms() {
	t := visits()
	p, err := query.Prepare(t, "visits", "SELECT COUNT(*), SUM(days), AVG(days) FROM visits GROUP BY dept", sensitivity.AddRemove)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("max_groups", p.MaxGroups, "max_rows_per_group", p.MaxRowsPerGroup)
	for _, c := range p.Components {
		fmt.Printf("%-18s ℓ1 = %-9.6g ℓ2 = %-9.6g share %.4g\n", c.Quantity, c.L1, c.L2, c.Share)
	}
	// Each share is rounded down: the parts never add up to more than ε.
	ms, _, _ := p.Mechanisms(query.ReleaseOptions{Budget: dpkit.Budget{Epsilon: 1.5}})
	for _, m := range ms {
		fmt.Printf("ε = %.6g\n", m.Guarantee().Epsilon)
	}
	// Output:
	// max_groups 2 max_rows_per_group 2
	// COUNT(*)           ℓ1 = 4         ℓ2 = 2.82843   share 0.3333
	// SUM(days)          ℓ1 = 120       ℓ2 = 84.853    share 0.3333
	// SUM(days − 15)     ℓ1 = 60.0001   ℓ2 = 42.4265   share 0.1667
	// COUNT(*)           ℓ1 = 4         ℓ2 = 2.82843   share 0.1667
	// ε = 0.5
	// ε = 0.5
	// ε = 0.25
	// ε = 0.25
}

// GROUP BY a column without a declared domain: partition selection releases only keys
// held by enough people. It takes an equal share of ε and all of δ, split over the
// max_groups keys one person may hold.
func ExamplePlan_ReleaseWith() {
	t := visits()
	p, _ := query.Prepare(t, "visits", "SELECT COUNT(*), QUANTILE(days, 0.9) FROM visits GROUP BY city", sensitivity.AddRemove)
	o := query.ReleaseOptions{Budget: dpkit.Budget{Epsilon: 1.5, Delta: 1e-6}}
	_, sel, _ := p.Mechanisms(o)
	fmt.Printf("selection share %.4g, per key ε' = %.6g, δ' = %g\n", p.SelectionShare, sel.PerPartition().Epsilon, sel.PerPartition().Delta)
	fmt.Printf("keep probability: 1 person %.3g, 20 people %.3g, certain from %d people\n",
		sel.ProbabilityKeep(1), sel.ProbabilityKeep(20), sel.CertainKeep())
	a, err := p.ReleaseWith(o, noise.Seeded(1)) // production code passes nil
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(a.Aggregates, "charged", a.Charged)
	for _, g := range a.Groups {
		fmt.Println(g.Keys, "count ±", (g.Intervals[0][1]-g.Intervals[0][0])/2, "quantile interval:", g.Intervals[1] != nil)
	}
	// Output:
	// selection share 0.3333, per key ε' = 0.25, δ' = 5e-07
	// keep probability: 1 person 5e-07, 20 people 0.00026, certain from 101 people
	// [COUNT(*) QUANTILE(days, 0.9)] charged (ε=1.5, δ=1e-06)
	// [lyon] count ± 24 quantile interval: false
	// [nice] count ± 24 quantile interval: false
	// [paris] count ± 24 quantile interval: false
}

// Gaussian noise is calibrated to the ℓ2 sensitivity: for counts in 2 groups of at most 2
// rows each, √8 ≈ 2.83 instead of the ℓ1 bound 4.
func ExampleReleaseOptions_gaussian() {
	t := visits()
	p, _ := query.Prepare(t, "visits", "SELECT COUNT(*) FROM visits GROUP BY dept", sensitivity.AddRemove)
	a, err := p.ReleaseWith(query.ReleaseOptions{Gaussian: true, Mu: 0.5}, noise.Seeded(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s, μ = %g, σ = %.4g, 95%% interval ±%g\n", a.Mechanism, a.Mu, a.Scale, (a.CI95[1]-a.CI95[0])/2)
	// Output:
	// discrete gaussian, μ = 0.5, σ = 5.657, 95% interval ±11
}

// An accuracy instead of a cost: the cheapest ε (or μ) whose 95% intervals are at most
// ±h.
func ExamplePlan_CostForAccuracy() {
	t := visits()
	p, _ := query.Prepare(t, "visits", "SELECT COUNT(*) FROM visits GROUP BY dept", sensitivity.AddRemove)
	for _, gaussian := range []bool{false, true} {
		o, err := p.CostForAccuracy(10, gaussian, 0)
		if err != nil {
			fmt.Println(err)
			return
		}
		h, _ := p.HalfWidth(o)
		if gaussian {
			fmt.Printf("Gaussian: μ = %.4g gives ±%g\n", o.Mu, h)
		} else {
			fmt.Printf("Laplace:  ε = %.4g gives ±%g\n", o.Budget.Epsilon, h)
		}
	}
	avg, _ := query.Prepare(t, "visits", "SELECT AVG(days) FROM visits", sensitivity.AddRemove)
	_, err := avg.CostForAccuracy(1, false, 0)
	fmt.Println(err)
	// Output:
	// Laplace:  ε = 1.137 gives ±10
	// Gaussian: μ = 0.528 gives ±10
	// query: invalid accuracy = AVG(days): want COUNT, SUM or HISTOGRAM: AVG's interval depends on the noisy count, so no cost guarantees its width; give a cost
}
