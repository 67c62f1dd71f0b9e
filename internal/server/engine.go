package server

import (
	"io"

	"github.com/dpkit/dpkit"
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
	return queryPlan{p}, nil
}

type queryPlan struct{ p *query.Plan }

// Release implements Prepared with query's release step (query.Plan.Release: pure
// ε-DP mechanisms calibrated to the plan's sensitivities; δ of the cost is not used, so
// charging the policy's (ε, δ) over-states the release's cost, the safe side).
func (q queryPlan) Release(b dpkit.Budget, src noise.Source) (Answer, error) {
	a, err := q.p.Release(b, src)
	if err != nil {
		return Answer{}, err
	}
	ans := Answer{Result: a.Result, Mechanism: a.Mechanism, Scale: a.Scale, CI95: a.CI95, Descriptor: a.Descriptor}
	if a.Groups != nil {
		ans.Groups = make([]Group, len(a.Groups))
		for i, g := range a.Groups {
			ans.Groups[i] = Group{Key: g.Key, Value: g.Value, CI95: g.CI95}
		}
	}
	return ans, nil
}
