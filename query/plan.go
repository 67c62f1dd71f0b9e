package query

import (
	"fmt"
	"math"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/sensitivity"
)

// Plan is a query checked against a table, with what a private release of it needs:
// the quantities to privatise and their sensitivities, from the declared bounds, the
// neighbouring relation and the privacy unit's MaxRows (never from the data).
//
// A Plan holds a reference to its Table and is safe for concurrent use.
type Plan struct {
	Query     *Query
	Neighbour sensitivity.Neighbour
	MaxRows   int      // rows one privacy unit may contribute (1 without a privacy unit)
	Groups    []string // the declared domain for GROUP BY / HISTOGRAM, in order; nil if ungrouped

	// Components are the quantities released with noise, each with its share of ε
	// (shares add up to 1). COUNT, SUM and HISTOGRAM have one component, AVG two (a
	// centred sum and a count), MEDIAN and QUANTILE one (the rank utility of the
	// exponential mechanism).
	Components []Component

	b *bound
}

// Component is one quantity a release privatises.
type Component struct {
	Quantity string  // e.g. "COUNT(*)", "SUM(salary)", "SUM(salary − 55000)", "rank utility"
	L1       float64 // ℓ1 sensitivity over all groups (for the exponential mechanism: Δu)
	L2       float64 // ℓ2 sensitivity over all groups
	Share    float64 // fraction of the query's ε spent on it
	Centre   float64 // AVG only: the public centre c subtracted from every value

	kind componentKind // which mechanism releases it
}

// componentKind says which mechanism releases a component.
type componentKind int

const (
	countComponent componentKind = iota // mechanism.Geometric
	sumComponent                        // mechanism.Laplace
	rankComponent                       // mechanism.Quantile
)

// sumSlack is the relative bound 2^-52 on the rounding of an exact sum to the nearest
// float64 (half an ulp is 2^-53 of the value; two sums differ by at most twice that).
const sumSlack = 0x1p-52

// Prepare parses sql and checks it against t, whose name in FROM clauses is name, for the
// neighbouring relation nb (sensitivity.AddRemove: add or remove one privacy unit, the
// default of dpkit; sensitivity.ReplaceOne: replace one unit's rows by another's).
// Syntax and schema errors are *Error values with the byte offset of the problem.
//
// Sensitivities (m = MaxRows, [lo, hi] the declared bounds, B = max(|lo|, |hi|)):
//
//	COUNT(*)                 sensitivity.Count(nb, m)                       = m
//	COUNT(*) GROUP BY, HISTOGRAM  ℓ1, ℓ2 = sensitivity.Histogram(nb, m)       (m, m | 2m, √2·m)
//	SUM(col)                 sensitivity.Sum(nb, lo, hi, m)                 (m·B | replace: see there)
//	SUM(col) GROUP BY        AddRemove: sensitivity.Sum(AddRemove, lo, hi, m); ReplaceOne: twice
//	                         that (the unit's rows may leave one group and enter another)
//	AVG(col)                 a centred sum Σ(x − c), c = (lo+hi)/2, with the SUM rule on
//	                         [lo−c, hi−c] (m·(hi−lo)/2 under AddRemove), and a count; ε is
//	                         split equally; the release is c + noisy sum / noisy count
//	MEDIAN, QUANTILE(col,p)  rank utility u = −|#{x_i below} − p·n| of the exponential
//	                         mechanism: Δu = m (AddRemove), 2m (ReplaceOne), summed over groups
//
// Sums are computed exactly and then rounded to float64 once; since two neighbouring
// sums of at most MaxRows values of magnitude ≤ B can each be rounded by 2^-53 of
// MaxRows·B, every changed group adds 2^-52·MaxRows·B = 2^-18·B to the sum's ℓ1
// sensitivity (at most min(2m, groups) groups change). The stated sensitivity therefore
// exceeds the exact one by at most a relative 2^-17 ≈ 7.6e-6 (plus one ulp from rounding
// up); it is never below it.
func Prepare(t *Table, name, sql string, nb sensitivity.Neighbour) (*Plan, error) {
	if nb != sensitivity.AddRemove && nb != sensitivity.ReplaceOne {
		return nil, &dpkit.ParamError{Pkg: "query", Name: "neighbour", Value: int(nb), Want: "sensitivity.AddRemove or sensitivity.ReplaceOne"}
	}
	q, err := Parse(sql)
	if err != nil {
		return nil, err
	}
	b, err := bind(q, t, name)
	if err != nil {
		return nil, err
	}
	p := &Plan{Query: q, Neighbour: nb, MaxRows: t.schema.maxRows(), b: b}
	if b.group != nil {
		p.Groups = append([]string(nil), b.group.domain.keys...)
	}
	if err := p.plan(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Plan) plan() error {
	m, nb, q := p.MaxRows, p.Neighbour, p.Query
	grouped := p.Groups != nil
	// changed bounds the number of groups one unit's rows can change.
	changed := 1
	if grouped {
		changed = min(m, len(p.Groups))
		if nb == sensitivity.ReplaceOne {
			changed = min(2*m, len(p.Groups))
		}
	}
	switch q.Agg {
	case Count, Histogram:
		c := Component{Quantity: "COUNT(*)", Share: 1, kind: countComponent}
		var err error
		if grouped {
			c.L1, c.L2, err = sensitivity.Histogram(nb, m)
		} else {
			c.L1, err = sensitivity.Count(nb, m)
			c.L2 = c.L1
		}
		if err != nil {
			return err
		}
		p.Components = []Component{c}
	case Sum:
		lo, hi := p.b.agg.decl.Min, p.b.agg.decl.Max
		l1, err := p.sumSensitivity(lo, hi, changed)
		if err != nil {
			return err
		}
		p.Components = []Component{{Quantity: fmt.Sprintf("SUM(%s)", p.b.agg.decl.Name), L1: l1, L2: l1, Share: 1, kind: sumComponent}}
	case Avg:
		lo, hi := p.b.agg.decl.Min, p.b.agg.decl.Max
		c := lo/2 + hi/2 // any public centre is sound; this one is within [lo, hi]
		// Half-width of [lo−c, hi−c], rounded up: |x − c| ≤ r for every x in [lo, hi].
		r := math.Max(subUp(hi, c), subUp(c, lo))
		l1, err := p.sumSensitivity(-r, r, changed)
		if err != nil {
			return err
		}
		cl1, cl2, err := sensitivity.Histogram(nb, m)
		if !grouped {
			cl1, err = sensitivity.Count(nb, m)
			cl2 = cl1
		}
		if err != nil {
			return err
		}
		p.Components = []Component{
			{Quantity: fmt.Sprintf("SUM(%s − %g)", p.b.agg.decl.Name, c), L1: l1, L2: l1, Share: 0.5, Centre: c, kind: sumComponent},
			{Quantity: "COUNT(*)", L1: cl1, L2: cl2, Share: 0.5, kind: countComponent},
		}
	case Median, Quantile:
		du := float64(m)
		if nb == sensitivity.ReplaceOne {
			du = 2 * float64(m)
		}
		p.Components = []Component{{Quantity: "rank utility", L1: du, L2: du, Share: 1, kind: rankComponent}}
	}
	return nil
}

// sumSensitivity returns the ℓ1 sensitivity of the (grouped) sum of values in [lo, hi],
// including the float64 rounding slack of the exact sums (see Prepare).
func (p *Plan) sumSensitivity(lo, hi float64, changed int) (float64, error) {
	nb := p.Neighbour
	twice := false
	if p.Groups != nil && nb == sensitivity.ReplaceOne {
		nb, twice = sensitivity.AddRemove, true
	}
	s, err := sensitivity.Sum(nb, lo, hi, p.MaxRows)
	if err != nil {
		return 0, err
	}
	if twice {
		s *= 2 // exact
	}
	b := math.Max(math.Abs(lo), math.Abs(hi))
	slack := float64(changed) * sumSlack * MaxRows * b // products of powers of two and small integers: exact unless subnormal
	return math.Nextafter(s+slack, math.Inf(1)), nil
}

// subUp returns a float64 ≥ a − b.
func subUp(a, b float64) float64 {
	d := a - b
	return math.Nextafter(d, math.Inf(1))
}

// Result is the exact, NOT private, answer to a query: for tests and for the curator.
type Result struct {
	Value  float64       // the aggregate (ungrouped queries); NaN for AVG/MEDIAN/QUANTILE of no rows
	Groups []GroupResult // one per declared domain value, in declared order (grouped queries)
}

// GroupResult is the exact aggregate of one group.
type GroupResult struct {
	Key   string
	Value float64
}

// Evaluate computes the exact aggregate, per group of the declared domain for grouped
// queries (groups with no rows included; rows whose value is outside the domain in none).
// The result is NOT differentially private. Counts and sums are exact (sums rounded once
// to the nearest float64), AVG is the exact mean rounded once, and the p-quantile is the
// value of rank ⌈p·n⌉ (at least 1) among the n selected values in increasing order.
func (p *Plan) Evaluate() *Result {
	gs := p.b.stats()
	if p.Groups == nil {
		return &Result{Value: p.b.exactValue(&gs[0])}
	}
	r := &Result{Groups: make([]GroupResult, len(gs))}
	for i := range gs {
		r.Groups[i] = GroupResult{Key: p.Groups[i], Value: p.b.exactValue(&gs[i])}
	}
	return r
}
