package query

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math/big"
	"slices"
	"strings"
)

// One plan, several executors: a Plan says what to compute (rows, contribution bounding,
// groups, exact aggregates, then noise); an Executor computes its exact part — in memory
// (*Table) or elsewhere, e.g. inside the database that holds the table (Plan.Compile
// gives the one SQL statement; package query/pushdown runs it on PostgreSQL) — and the
// release step (Plan.ReleaseFrom) adds the noise, through package mechanism, to the
// statistics the executor emits. Executors never see noise; the release step never sees
// rows.

// An Executor computes the exact, NOT private, statistics of a plan's groups: it selects
// the rows (WHERE), bounds each privacy unit's contribution with the rule that seed keys
// (see Seed), assigns the rows to groups and aggregates them, then calls emit once per
// group (an ungrouped plan has one group). Groups of declared domains that hold no row may
// be left out (the release step fills them in); found keys (partition selection) come in
// any order. emit's error is returned as is. Every executor of a plan must give the same
// statistics for the same table and seed: the property that ties them together
// (query/pushdown tests it against PostgreSQL).
type Executor interface {
	Execute(ctx context.Context, p *Plan, seed Seed, emit func(*GroupExact) error) error
}

// GroupExact is the exact, NOT private, statistics of one group, after contribution
// bounding: what the noise step needs, and nothing about single rows.
type GroupExact struct {
	Keys []string // canonical text of the key, one per grouping column; nil when ungrouped
	Rows int64    // rows in the group: COUNT(*)
	// Units is, with partition selection (Plan.Selection), the number of distinct privacy
	// units among the rows (each row is a unit without a privacy unit column); else 0.
	Units int64
	// Aggs holds one entry per aggregate of the plan, in SELECT order (zero for COUNT).
	Aggs []AggregateExact
}

// AggregateExact is the exact statistics of one aggregate in one group.
type AggregateExact struct {
	// N is the number of rows whose value is not NULL (SUM, AVG, MEDIAN, QUANTILE).
	N int64
	// Sum (SUM, AVG) is Σ x/γ over those rows, exactly: the clamped values in units of the
	// column's grid γ (1 for Int columns, Table's float grid for Float columns; see
	// AggregatePlan.Grid). nil means 0.
	Sum *big.Int
	// Sorted (MEDIAN, QUANTILE) is the non-NULL values in increasing order.
	Sorted []float64
}

// String returns the statistics as text, exactly (sums as integers in grid units), for
// comparisons and messages: "[eng] rows=3 units=2 | n=3 sum=150000 | n=2 sorted=[1 2]".
func (g *GroupExact) String() string {
	var b strings.Builder
	if g.Keys != nil {
		fmt.Fprintf(&b, "%q ", g.Keys)
	}
	fmt.Fprintf(&b, "rows=%d units=%d", g.Rows, g.Units)
	for _, a := range g.Aggs {
		fmt.Fprintf(&b, " | n=%d", a.N)
		if a.Sum != nil && a.Sum.Sign() != 0 {
			fmt.Fprintf(&b, " sum=%s", a.Sum)
		}
		if a.Sorted != nil {
			fmt.Fprintf(&b, " sorted=%v", a.Sorted)
		}
	}
	return b.String()
}

// Seed keys the random choices of contribution bounding: which rows of a privacy unit
// over its bounds are kept (MaxRows, MaxRowsPerGroup) and which of its groups
// (MaxGroups). Every executor makes the same choices for the same seed (see
// Plan.Compile for the rule). The privacy guarantee holds for every seed, because a unit's
// choices depend only on its own rows and the seed; a fresh random seed per query (NewSeed)
// makes each unit's choice a uniformly random one.
type Seed [16]byte

// NewSeed returns a seed from crypto/rand.
func NewSeed() Seed {
	var s Seed
	_, _ = rand.Read(s[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	return s
}

// String returns the seed in hexadecimal, as it enters the keyed hash.
func (s Seed) String() string { return hex.EncodeToString(s[:]) }

// collect runs x on p and returns the emitted groups, every declared group in order (the
// missing ones empty), or the found keys sorted (see sortKeys).
func (p *Plan) collect(ctx context.Context, x Executor, seed Seed) ([]*GroupExact, error) {
	var out []*GroupExact
	if p.Keys != nil {
		out = make([]*GroupExact, len(p.Keys))
	}
	err := x.Execute(ctx, p, seed, func(g *GroupExact) error {
		if err := p.checkGroup(g); err != nil {
			return err
		}
		if p.Keys == nil {
			out = append(out, g)
			return nil
		}
		s, _ := p.slot(g.Keys) // checked
		if out[s] != nil {
			return fmt.Errorf("query: executor emitted group %q twice", g.Keys)
		}
		out[s] = g
		return nil
	})
	if err != nil {
		return nil, err
	}
	switch {
	case p.Keys != nil:
		for s := range out {
			if out[s] == nil {
				out[s] = p.emptyGroup(p.Keys[s])
			}
		}
	case p.GroupColumns == nil:
		if len(out) != 1 {
			return nil, fmt.Errorf("query: executor emitted %d groups for an ungrouped query", len(out))
		}
	default:
		p.sortKeys(out)
	}
	return out, nil
}

// emptyGroup returns the statistics of a group without rows.
func (p *Plan) emptyGroup(keys []string) *GroupExact {
	return &GroupExact{Keys: keys, Aggs: make([]AggregateExact, len(p.Aggregates))}
}

// Collect runs x on p with seed and returns the exact statistics of every group: for an
// ungrouped plan one, for declared groups all of them in the order of Keys (those without
// rows included), for found keys (partition selection) every key in sorted order. It is
// NOT private: for tests (every executor must give the same) and for the curator.
func (p *Plan) Collect(ctx context.Context, x Executor, seed Seed) ([]*GroupExact, error) {
	return p.collect(ctx, x, seed)
}

// checkGroup checks what an executor emitted against the plan: the key's shape (and, for
// declared groups, that it is one), and the invariants every bounded aggregate satisfies —
// units ≤ rows, values ≤ rows, sums within [n·lo, n·hi] in grid units — so that an
// executor that did not clamp or bound fails loudly instead of releasing with the wrong
// sensitivity.
func (p *Plan) checkGroup(g *GroupExact) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("query: executor emitted an impossible group %s: %s", g, fmt.Sprintf(format, args...))
	}
	if len(g.Keys) != len(p.GroupColumns) {
		return bad("%d key values for %d grouping columns", len(g.Keys), len(p.GroupColumns))
	}
	if p.Keys != nil {
		if _, ok := p.slot(g.Keys); !ok {
			return bad("not a declared group")
		}
	}
	if len(g.Aggs) != len(p.Aggregates) {
		return bad("%d aggregates, the plan has %d", len(g.Aggs), len(p.Aggregates))
	}
	units := g.Units
	if g.Rows < 0 || units < 0 || units > g.Rows || p.Selection && g.Rows > 0 && units == 0 || !p.Selection && units != 0 {
		return bad("rows %d, units %d", g.Rows, g.Units)
	}
	for i, a := range g.Aggs {
		if a.N < 0 || a.N > g.Rows {
			return bad("aggregate %d: %d values in %d rows", i, a.N, g.Rows)
		}
		switch p.Aggregates[i].Func {
		case Sum, Avg:
			lo, hi := p.gridRange(i)
			s := a.Sum
			if s == nil {
				s = new(big.Int)
			}
			n := big.NewInt(a.N)
			if s.Cmp(new(big.Int).Mul(n, big.NewInt(lo))) < 0 || s.Cmp(new(big.Int).Mul(n, big.NewInt(hi))) > 0 {
				return bad("aggregate %d: sum outside [n·%d, n·%d]", i, lo, hi)
			}
		case Median, Quantile:
			lo, hi := p.bounds(i)
			if int64(len(a.Sorted)) != a.N || !slices.IsSorted(a.Sorted) ||
				a.N > 0 && (a.Sorted[0] < lo || a.Sorted[len(a.Sorted)-1] > hi) {
				return bad("aggregate %d: values not %d sorted values in [%v, %v]", i, a.N, lo, hi)
			}
		}
	}
	return nil
}
