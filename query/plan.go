package query

import (
	"context"
	"fmt"
	"math"
	"math/big"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/sensitivity"
)

// Plan is a query checked against a table's schema, with what a private release of it
// needs: the quantities to privatise and their sensitivities, from the declared bounds,
// the neighbouring relation and the privacy unit's bounds (never from the data).
//
// It is a logical plan of five steps, each a field: the rows (WHERE), contribution
// bounding (per query, at most MaxRows rows per unit, and for grouped queries at most
// MaxGroups groups per unit with at most MaxRowsPerGroup rows in each; which ones, for a
// unit over a bound, is a uniformly random choice keyed by the query's Seed, see
// Compile), the groups (GroupColumns over their declared domains, or the keys found in
// the data and released by partition selection), the exact aggregates (Aggregates, each
// with its Components: counts, sums of clamped values, sorted values), and the mechanisms
// that add noise to them (Mechanisms, which never see rows). An Executor runs the exact
// steps: the Table the plan was prepared on (in memory), or the database holding the
// table (Compile); ReleaseFrom adds the noise.
//
// A Plan is safe for concurrent use.
type Plan struct {
	Query     *Query
	Neighbour sensitivity.Neighbour
	MaxRows   int // rows one privacy unit may contribute (1 without a privacy unit)
	// MaxGroups and MaxRowsPerGroup are the bounds applied to grouped queries: the
	// declared ones (PrivacyUnit), else MaxRows; MaxGroups is also at most the number of
	// declared groups.
	MaxGroups, MaxRowsPerGroup int

	GroupColumns []string   // GROUP BY columns (HISTOGRAM: its column); nil if ungrouped
	Keys         [][]string // the declared groups (domains' product, first column slowest); nil if ungrouped or Selection
	Groups       []string   // Keys of a single grouping column (one value each); nil otherwise
	// Selection is true when a grouping column has no declared domain: the groups are the
	// keys found in the data, and only those kept by partition selection are released
	// (a release then needs δ > 0).
	Selection bool

	// Aggregates are the query's aggregates in SELECT order, each with its components.
	Aggregates []AggregatePlan
	// Components are all the quantities released with noise, aggregate by aggregate,
	// each with its share of the cost (shares add up to 1 with the selection's).
	Components []Component
	// SelectionShare is the share of ε that partition selection takes (0 without it).
	SelectionShare float64

	schema   Schema
	nullable []bool // per column: may hold NULLs (nil: every numeric column may)
	table    *Table // the table of Prepare; nil for PrepareSchema
	b        *bound
	// per grouping column: the declared domain's canonical keys (nil: none, selection)
	// and their indices
	domains     [][]string
	domainIndex []map[string]int
}

// AggregatePlan is one aggregate of a plan.
type AggregatePlan struct {
	Text       string // canonical text, e.g. "SUM(salary)"
	Func       Agg    // HISTOGRAM is planned as COUNT
	Column     string
	P          float64
	Components []Component
}

// Component is one quantity a release privatises.
type Component struct {
	Quantity string  // e.g. "COUNT(*)", "SUM(salary)", "SUM(salary − 55000)", "rank utility"
	L1       float64 // ℓ1 sensitivity over all groups (for the exponential mechanism: Δu)
	L2       float64 // ℓ2 sensitivity over all groups
	// Share is the fraction of the query's cost spent on it: of ε for pure-ε releases,
	// of μ² for Gaussian ones (the split rule of Plan.Mechanisms).
	Share  float64
	Centre float64 // AVG only: the public centre c subtracted from every value

	kind componentKind // which mechanism releases it
	agg  int           // index of its aggregate
}

// componentKind says which mechanism releases a component.
type componentKind int

const (
	countComponent componentKind = iota // mechanism.Geometric (or Gaussian, integer)
	sumComponent                        // mechanism.Laplace (or Gaussian)
	rankComponent                       // mechanism.Quantile
)

// sumSlack is the relative bound 2^-52 on the rounding of an exact sum to the nearest
// float64 (half an ulp is 2^-53 of the value; two sums differ by at most twice that).
const sumSlack = 0x1p-52

// Prepare parses sql and checks it against t, whose name in FROM clauses is name, for the
// neighbouring relation nb (sensitivity.AddRemove: add or remove one privacy unit, the
// default of dpkit; sensitivity.ReplaceOne: replace one unit's rows by another's).
// Syntax and schema errors are *Error values with the byte offset of the problem. The
// plan runs on t (ReleaseWith, Evaluate); it is PrepareSchema(t.Schema(), …) with t as
// its executor.
//
// Sensitivities (m = MaxRows, g = MaxGroups, c = MaxRowsPerGroup, [lo, hi] the declared
// bounds, B = max(|lo|, |hi|); package sensitivity):
//
//	COUNT(*)                 sensitivity.Count(nb, m)                       = m
//	COUNT(*) GROUP BY …, HISTOGRAM   sensitivity.Grouped(nb, m, g, c, 1):  ℓ1 = min(m, g·c),
//	                         ℓ2 = √(k·c² + r²) (k = min(g, ⌊m/c⌋) groups filled to c, r
//	                         left over); ReplaceOne 2ℓ1, √2ℓ2 (with g = c = m: m, m | 2m, √2·m)
//	SUM(col)                 sensitivity.Sum(nb, lo', hi', m)               (m·B | replace: see there)
//	SUM(col) GROUP BY …      sensitivity.Grouped(nb, m, g, c, B) (ReplaceOne: 2ℓ1, 2ℓ2)
//	AVG(col)                 a centred sum Σ(x − c), c = (lo+hi)/2, with the SUM rule on
//	                         [lo−c, hi−c], and a count of the values; the aggregate's share
//	                         of the cost is split equally; the release is c + noisy sum /
//	                         noisy count
//	MEDIAN, QUANTILE(col,p)  rank utility u = −|#{x_i below} − p·n| of the exponential
//	                         mechanism: Δu = m (AddRemove), 2m (ReplaceOne); grouped:
//	                         min(m, g·c), summed over groups (doubled for ReplaceOne)
//
// For an ungrouped SUM under ReplaceOne, [lo', hi'] = [min(lo, 0), max(hi, 0)] when a unit
// may contribute a sum of 0 — when the query has a WHERE clause (the unit's rows may all
// be left out) or the column may hold NULLs (Table.Nullable; a NULL adds nothing) — else
// [lo, hi]. Add/remove sensitivities are unchanged by both (0 is within ±B).
//
// Sums are computed exactly and then rounded to float64 once; since two neighbouring
// sums of at most MaxRows values of magnitude ≤ B can each be rounded by 2^-53 of
// MaxRows·B, every changed group adds 2^-52·MaxRows·B = 2^-18·B to the sum's ℓ1 and ℓ2
// sensitivities (at most min(g, groups) groups change, twice that for ReplaceOne). The
// stated sensitivity therefore exceeds the exact one by at most a relative 2^-17 ≈ 7.6e-6
// (plus one ulp from rounding up); it is never below it.
func Prepare(t *Table, name, sql string, nb sensitivity.Neighbour) (*Plan, error) {
	p, err := prepare(t.Schema(), t.nullable(), name, sql, nb)
	if err != nil {
		return nil, err
	}
	p.table = t
	return p, nil
}

// PrepareSchema is Prepare against a schema instead of a loaded table: the plan of a
// query on a table that lives elsewhere (a live PostgreSQL table, package
// query/pushdown), released with ReleaseFrom and that table's Executor. Every numeric
// column is taken to possibly hold NULLs (see Prepare for what that changes). The schema
// is validated first (a *dpkit.ParamError naming the field).
func PrepareSchema(s Schema, name, sql string, nb sensitivity.Neighbour) (*Plan, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	s = s.clone()
	return prepare(s, nil, name, sql, nb)
}

// prepare plans sql against schema s (a copy the plan owns); nullable says which columns
// may hold NULLs (nil: every numeric column).
func prepare(s Schema, nullable []bool, name, sql string, nb sensitivity.Neighbour) (*Plan, error) {
	if nb != sensitivity.AddRemove && nb != sensitivity.ReplaceOne {
		return nil, &dpkit.ParamError{Pkg: "query", Name: "neighbour", Value: int(nb), Want: "sensitivity.AddRemove or sensitivity.ReplaceOne"}
	}
	q, err := Parse(sql)
	if err != nil {
		return nil, err
	}
	p := &Plan{Query: q, Neighbour: nb, schema: s, nullable: nullable}
	b, err := bind(q, &p.schema, name)
	if err != nil {
		return nil, err
	}
	p.b, p.Selection, p.MaxRows = b, b.selection, s.maxRows()
	p.MaxGroups, p.MaxRowsPerGroup = s.groupBounds()
	if b.groups != nil {
		for _, c := range b.groups {
			p.GroupColumns = append(p.GroupColumns, s.Columns[c].Name)
		}
		p.resolveDomains()
		if !b.selection {
			if err := p.declaredKeys(); err != nil {
				return nil, err
			}
			p.MaxGroups = min(p.MaxGroups, max(len(p.Keys), 1))
			if len(b.groups) == 1 {
				p.Groups = p.domains[0]
			}
		}
		p.MaxGroups = min(p.MaxGroups, p.MaxRows*p.MaxRowsPerGroup) // more groups than rows cannot be held
	}
	if err := p.plan(); err != nil {
		return nil, err
	}
	return p, nil
}

// plan computes each aggregate's components, sensitivities and shares (equal shares per
// aggregate, and per partition selection; AVG halves its share between its sum and count).
func (p *Plan) plan() error {
	parts := len(p.b.aggs)
	if p.Selection {
		parts++
	}
	share := 1 / float64(parts)
	for i := range p.b.aggs {
		a := &p.b.aggs[i]
		ap := AggregatePlan{Text: a.Aggregate.String(), Func: a.fn(), Column: a.Column, P: a.P}
		cs, err := p.components(a, share)
		if err != nil {
			return err
		}
		for j := range cs {
			cs[j].agg = i
		}
		ap.Components = cs
		p.Aggregates = append(p.Aggregates, ap)
		p.Components = append(p.Components, cs...)
	}
	if p.Selection {
		p.SelectionShare = share
	}
	return nil
}

// components returns the noisy quantities of one aggregate, at the given share.
func (p *Plan) components(a *boundAgg, share float64) ([]Component, error) {
	grouped := p.b.groups != nil
	var decl *Column
	if a.col >= 0 {
		decl = &p.schema.Columns[a.col]
	}
	switch a.fn() {
	case Count:
		l1, l2, err := p.countSensitivity()
		return []Component{{Quantity: "COUNT(*)", L1: l1, L2: l2, Share: share, kind: countComponent}}, err
	case Sum:
		lo, hi := decl.Min, decl.Max
		if p.Neighbour == sensitivity.ReplaceOne && (p.Query.Where != nil || p.mayBeNull(a.col)) {
			lo, hi = math.Min(lo, 0), math.Max(hi, 0) // a unit's sum may be 0
		}
		l1, l2, err := p.sumSensitivity(lo, hi)
		return []Component{{Quantity: fmt.Sprintf("SUM(%s)", decl.Name), L1: l1, L2: l2, Share: share, kind: sumComponent}}, err
	case Avg:
		lo, hi := decl.Min, decl.Max
		c := lo/2 + hi/2 // any public centre is sound; this one is within [lo, hi]
		// Half-width of [lo−c, hi−c], rounded up: |x − c| ≤ r for every x in [lo, hi].
		r := math.Max(subUp(hi, c), subUp(c, lo))
		l1, l2, err := p.sumSensitivity(-r, r)
		if err != nil {
			return nil, err
		}
		cl1, cl2, err := p.countSensitivity()
		return []Component{
			{Quantity: fmt.Sprintf("SUM(%s − %g)", decl.Name, c), L1: l1, L2: l2, Share: share / 2, Centre: c, kind: sumComponent},
			{Quantity: "COUNT(*)", L1: cl1, L2: cl2, Share: share / 2, kind: countComponent},
		}, err
	}
	// Median, Quantile: a unit's rows move the rank utilities of all groups by Σ c_j.
	du := float64(p.MaxRows)
	if grouped {
		du = float64(min(p.MaxRows, p.MaxGroups*p.MaxRowsPerGroup))
	}
	if p.Neighbour == sensitivity.ReplaceOne {
		du *= 2
	}
	return []Component{{Quantity: "rank utility", L1: du, L2: du, Share: share, kind: rankComponent}}, nil
}

// mayBeNull reports whether column c may hold NULLs.
func (p *Plan) mayBeNull(c int) bool {
	if p.nullable == nil {
		return p.schema.Columns[c].Type != String
	}
	return p.nullable[c]
}

// countSensitivity returns the ℓ1 and ℓ2 sensitivities of the (grouped) count.
func (p *Plan) countSensitivity() (float64, float64, error) {
	if p.b.groups == nil {
		l1, err := sensitivity.Count(p.Neighbour, p.MaxRows)
		return l1, l1, err
	}
	return sensitivity.Grouped(p.Neighbour, p.MaxRows, p.MaxGroups, p.MaxRowsPerGroup, 1, true)
}

// changedGroups bounds the number of groups one unit's rows can change.
func (p *Plan) changedGroups() int {
	if p.b.groups == nil {
		return 1
	}
	changed := p.MaxGroups
	if p.Neighbour == sensitivity.ReplaceOne {
		changed *= 2
	}
	if p.Keys != nil {
		changed = min(changed, len(p.Keys))
	}
	return changed
}

// sumSensitivity returns the ℓ1 and ℓ2 sensitivities of the (grouped) sum of values in
// [lo, hi], including the float64 rounding slack of the exact sums (see Prepare).
func (p *Plan) sumSensitivity(lo, hi float64) (float64, float64, error) {
	b := math.Max(math.Abs(lo), math.Abs(hi))
	var l1, l2 float64
	var err error
	if p.b.groups == nil {
		l1, err = sensitivity.Sum(p.Neighbour, lo, hi, p.MaxRows)
		l2 = l1
	} else {
		l1, l2, err = sensitivity.Grouped(p.Neighbour, p.MaxRows, p.MaxGroups, p.MaxRowsPerGroup, b, false)
	}
	if err != nil {
		return 0, 0, err
	}
	slack := float64(p.changedGroups()) * sumSlack * MaxRows * b // products of powers of two and small integers: exact unless subnormal
	up := func(s float64) float64 { return math.Nextafter(s+slack, math.Inf(1)) }
	return up(l1), up(l2), nil
}

// subUp returns a float64 ≥ a − b.
func subUp(a, b float64) float64 {
	d := a - b
	return math.Nextafter(d, math.Inf(1))
}

// Result is the exact, NOT private, answer to a query: for tests and for the curator.
type Result struct {
	Value  float64       // the first aggregate (ungrouped queries); NaN for AVG/MEDIAN/QUANTILE of no rows
	Values []float64     // every aggregate, in SELECT order (ungrouped queries)
	Groups []GroupResult // one per group (grouped queries): declared groups in order, or the keys found
}

// GroupResult is the exact aggregates of one group.
type GroupResult struct {
	Key    string    // the first grouping column's value
	Keys   []string  // one value per grouping column
	Value  float64   // the first aggregate
	Values []float64 // every aggregate
	Units  int64     // distinct privacy units holding the group (after contribution bounding)
}

// Evaluate computes the exact aggregates on the plan's table, with contribution bounding
// keyed by the zero Seed (so that it is repeatable): per group for grouped queries (every
// declared group, those with no rows included, rows whose value is outside a domain in
// none; or, with partition selection, every key found in the data — none of them
// selected). The result is NOT differentially private. Counts and sums are exact (sums
// rounded once to the nearest float64), AVG is the exact mean of the non-NULL values
// rounded once, and the p-quantile is the value of rank ⌈p·n⌉ (at least 1) among the n
// non-NULL selected values in increasing order. A plan of PrepareSchema has no table:
// Evaluate returns nil (use Collect with its executor).
func (p *Plan) Evaluate() *Result {
	if p.table == nil {
		return nil
	}
	gs, err := p.collect(context.Background(), p.table, Seed{})
	if err != nil {
		return nil // unreachable: the in-memory executor does not fail on its own plan
	}
	return p.result(gs)
}

// result turns exact statistics into exact values.
func (p *Plan) result(gs []*GroupExact) *Result {
	row := func(g *GroupExact) []float64 {
		v := make([]float64, len(p.Aggregates))
		for i := range v {
			v[i] = p.value(g, i)
		}
		return v
	}
	if p.GroupColumns == nil {
		v := row(gs[0])
		return &Result{Value: v[0], Values: v}
	}
	r := &Result{Groups: make([]GroupResult, len(gs))}
	for s, g := range gs {
		v := row(g)
		r.Groups[s] = GroupResult{Key: g.Keys[0], Keys: g.Keys, Value: v[0], Values: v, Units: g.Units}
	}
	return r
}

// value returns the exact value of aggregate i in group g, rounded to the nearest
// float64: the count, the sum, the mean (NaN for no values), or the p-quantile, the value
// of rank ⌈p·n⌉ among the sorted values (NaN for no values).
func (p *Plan) value(g *GroupExact, i int) float64 {
	a := &g.Aggs[i]
	switch p.Aggregates[i].Func {
	case Count:
		return float64(g.Rows)
	case Sum:
		f, _ := p.exactSum(i, a).Float64()
		return f
	case Avg:
		if a.N == 0 {
			return math.NaN()
		}
		r, _ := p.exactSum(i, a).Rat(nil)
		f, _ := r.Quo(r, new(big.Rat).SetInt64(a.N)).Float64()
		return f
	}
	if a.N == 0 {
		return math.NaN()
	}
	return a.Sorted[quantileRank(p.Aggregates[i].P, a.N)-1]
}
