package server

import (
	"context"
	"io"

	"github.com/dpkit/dpkit/noise"
	"github.com/dpkit/dpkit/query"
	"github.com/dpkit/dpkit/sensitivity"
)

// QueryEngine adapts package query to the Engine the handlers use: tables are loaded
// with query.LoadCSV (contribution bounding with a secure random choice of rows), queries
// planned with query.Prepare under add/remove-one-unit neighbours (dpkit's default).
type QueryEngine struct{}

var _ Engine = QueryEngine{}

// Load implements Engine.
func (QueryEngine) Load(schema query.Schema, r io.Reader) (Table, error) {
	t, err := query.LoadCSV(r, schema, query.LoadOptions{Source: noise.Secure()})
	if err != nil {
		return nil, err
	}
	return queryTable{t}, nil
}

type queryTable struct{ t *query.Table }

func (q queryTable) Prepare(name, sql string) (Prepared, error) {
	p, err := query.Prepare(q.t, name, sql, sensitivity.AddRemove)
	if err != nil {
		return nil, err
	}
	return queryPlan{p: p, x: q.t}, nil
}

// queryPlan is a plan and the executor of its exact step: the table in memory, or a
// live table (live.go).
type queryPlan struct {
	p *query.Plan
	x query.Executor
}

// Release implements Prepared with query's release step (query.Plan.ReleaseFrom): the
// pure-ε mechanisms, or Gaussian ones, calibrated to the plan's sensitivities.
func (q queryPlan) Release(ctx context.Context, o query.ReleaseOptions, src noise.Source) (Answer, error) {
	a, err := q.p.ReleaseFrom(ctx, o, q.x, src)
	if err != nil {
		return Answer{}, err
	}
	return answerOf(a), nil
}

// CostForAccuracy implements Prepared.
func (q queryPlan) CostForAccuracy(h float64, gaussian bool, delta float64) (query.ReleaseOptions, error) {
	return q.p.CostForAccuracy(h, gaussian, delta)
}

// HalfWidth implements Prepared.
func (q queryPlan) HalfWidth(o query.ReleaseOptions) (float64, error) { return q.p.HalfWidth(o) }

// answerOf converts query's answer to the response's shapes: the single-aggregate shape
// (result, groups[].key/value/ci95) for one aggregate and at most one grouping column,
// else aggregates with values and a list of intervals (groups[].key a list).
func answerOf(a *query.Answer) Answer {
	ans := Answer{Aggregates: a.Aggregates, GroupBy: a.GroupColumns, Result: a.Result, Mechanism: a.Mechanism, Scale: a.Scale, Descriptor: a.Descriptor}
	if a.Mu > 0 {
		mu := a.Mu
		ans.Mu = &mu
	}
	legacy := len(a.Aggregates) == 1 && len(a.GroupColumns) <= 1
	if legacy {
		if a.CI95 != nil {
			ans.CI95 = a.CI95
		}
	} else if a.Groups == nil {
		ans.Values, ans.CI95 = a.Values, a.Intervals
	}
	if a.Groups == nil && a.GroupColumns == nil {
		return ans
	}
	ans.Groups = make([]Group, len(a.Groups))
	for i, g := range a.Groups {
		if legacy {
			v := g.Value
			ans.Groups[i] = Group{Key: g.Key, Value: &v}
			if g.CI95 != nil {
				ans.Groups[i].CI95 = g.CI95
			}
			continue
		}
		ans.Groups[i] = Group{Key: g.Keys, Values: g.Values, CI95: g.Intervals}
	}
	return ans
}
