package server

import (
	"context"
	"errors"

	"github.com/dpkit/dpkit"
)

// The demo datasets are the two tables of Zhipeng Cai's "Differential Privacy" lecture slides:
// the flu table of the counting-query example (Hunter, Alice, Bob, Eric, Frank; flu ∈
// {0, 1}) and the salary table of the sensitivity example ("Valid salary: [10000,
// 100000]"). Each gets the budget (ε = 1, δ = 1e-6) under the fixed policy with at most
// 20 queries.

const fluCSV = `name,flu
Hunter,1
Alice,0
Bob,1
Eric,0
Frank,1
`

const salaryCSV = `name,salary
Hunter,50000
Alice,50000
Bob,20000
Eric,100000
Frank,60000
`

// DemoBudget and DemoMaxQueries are the demo datasets' budget and policy.
var (
	DemoBudget     = dpkit.Budget{Epsilon: 1, Delta: 1e-6}
	DemoMaxQueries = int64(20)
)

func ptr[T any](v T) *T { return &v }

// DemoDatasets returns the registrations of the demo datasets "flu" and "salary".
func DemoDatasets() []CreateDatasetRequest {
	budget := DemoBudget
	return []CreateDatasetRequest{
		{DatasetSpec: DatasetSpec{
			Name: "flu",
			Columns: map[string]ColumnSpec{
				"name": {Type: "string"},
				"flu":  {Type: "int", Min: ptr(0.0), Max: ptr(1.0), Domain: []any{"0", "1"}},
			},
			Budget: &budget,
			Policy: &PolicySpec{Mode: "fixed", MaxQueries: DemoMaxQueries},
		}, CSV: fluCSV},
		{DatasetSpec: DatasetSpec{
			Name: "salary",
			Columns: map[string]ColumnSpec{
				"name":   {Type: "string"},
				"salary": {Type: "int", Min: ptr(10000.0), Max: ptr(100000.0)},
			},
			Budget: &budget,
			Policy: &PolicySpec{Mode: "fixed", MaxQueries: DemoMaxQueries},
		}, CSV: salaryCSV},
	}
}

// DemoKeys is what "dpkit serve --demo" prints on its first line.
type DemoKeys struct {
	AdminKey   string `json:"admin_key"`
	AnalystKey string `json:"analyst_key"`
}

// SetUpDemo registers the demo datasets that are not registered yet (a restart on the
// same database keeps the existing ones and their budgets) and mints a new admin key and
// a new analyst key granted both datasets. Keys of earlier starts stay valid: keys are
// stored only hashed, so they cannot be printed again.
func (s *Server) SetUpDemo(ctx context.Context) (DemoKeys, error) {
	var names []string
	for _, req := range DemoDatasets() {
		names = append(names, req.Name)
		if _, err := s.Register(ctx, req); err != nil && !errors.Is(err, ErrExists) {
			return DemoKeys{}, err
		}
	}
	_, admin, err := s.CreateKey(ctx, "demo admin", Admin, nil)
	if err != nil {
		return DemoKeys{}, err
	}
	_, analyst, err := s.CreateKey(ctx, "demo analyst", Analyst, names)
	if err != nil {
		return DemoKeys{}, err
	}
	return DemoKeys{AdminKey: admin, AnalystKey: analyst}, nil
}

// Bootstrap mints an admin key if the database has none (a fresh database), and returns
// it; it returns "" when an admin key exists.
func (s *Server) Bootstrap(ctx context.Context) (string, error) {
	n, err := s.reg.CountKeys(ctx, Admin)
	if err != nil || n > 0 {
		return "", err
	}
	_, secret, err := s.CreateKey(ctx, "admin", Admin, nil)
	return secret, err
}
