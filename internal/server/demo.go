package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/demodata"
	"github.com/dpkit/dpkit/internal/registry"
	"github.com/dpkit/dpkit/internal/sqldb"
)

// The demo datasets: "visits", a synthetic table of 1.2·10^5 clinic visits by 60 000
// patients (package demodata: deterministic, with documented marginals), large enough
// that answers at the demo's budget are visibly close to the truth; and the two tables
// of Zhipeng Cai's "Differential Privacy" lecture slides, the flu table of the
// counting-query example (Hunter, Alice, Bob, Eric, Frank; flu ∈ {0, 1}) and the salary
// table of the sensitivity example ("Valid salary: [10000, 100000]"), five rows each, on
// which every answer is mostly noise. Each gets the budget (ε = 1, δ = 1e-6) under the
// fixed policy with at most 20 queries, all pure ε-DP ("pure": true, δ0 = 0: each
// query costs ε0 = 0.05695 where the rule δ0 = δ/(2K) would leave 0.05611). Every
// useful query of theirs is pure: their grouping columns have declared domains, and
// grouping by the others (a patient, a name) would need partition selection, which
// needs δ > 0 and would keep no group of one person — those are refused, saying why.

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

// DemoBudget and DemoMaxQueries are the demo datasets' budget and policy (with pure
// releases).
var (
	DemoBudget     = dpkit.Budget{Epsilon: 1, Delta: 1e-6}
	DemoMaxQueries = int64(20)
)

func ptr[T any](v T) *T { return &v }

// DemoDatasets returns the registrations of the demo datasets "visits", "flu" and
// "salary".
func DemoDatasets() []CreateDatasetRequest {
	budget := DemoBudget
	policy := &PolicySpec{Mode: "fixed", MaxQueries: DemoMaxQueries, Pure: true}
	visits := map[string]ColumnSpec{}
	for _, c := range demodata.Columns {
		spec := ColumnSpec{Type: c.Type}
		if c.Type != "string" {
			spec.Min, spec.Max = ptr(c.Min), ptr(c.Max)
		}
		for _, v := range c.Domain {
			spec.Domain = append(spec.Domain, v)
		}
		visits[c.Name] = spec
	}
	return []CreateDatasetRequest{
		{DatasetSpec: DatasetSpec{
			Name:        "visits",
			Columns:     visits,
			PrivacyUnit: &UnitSpec{Column: "patient", MaxRows: demodata.MaxVisits},
			Budget:      &budget,
			Policy:      policy,
		}, CSV: demodata.CSV()},
		{DatasetSpec: DatasetSpec{
			Name: "flu",
			Columns: map[string]ColumnSpec{
				"name": {Type: "string"},
				"flu":  {Type: "int", Min: ptr(0.0), Max: ptr(1.0), Domain: []any{"0", "1"}},
			},
			Budget: &budget,
			Policy: policy,
		}, CSV: fluCSV},
		{DatasetSpec: DatasetSpec{
			Name: "salary",
			Columns: map[string]ColumnSpec{
				"name":   {Type: "string"},
				"salary": {Type: "int", Min: ptr(10000.0), Max: ptr(100000.0)},
			},
			Budget: &budget,
			Policy: policy,
		}, CSV: salaryCSV},
	}
}

// DemoKeys is what "dpkit serve --demo" prints on its first line, and the demo datasets
// whose budget is spent.
type DemoKeys struct {
	AdminKey   string   `json:"admin_key"`
	AnalystKey string   `json:"analyst_key"`
	Spent      []string `json:"-"`
}

// SetUpDemo registers the demo datasets that are not registered yet (a restart on the
// same database keeps the existing ones and their budgets), revokes the demo keys of
// earlier starts, and mints a new admin key and a new analyst key granted the demo
// datasets, all marked as demo keys. It reports the demo datasets whose budget is
// spent (see ResetDemo).
func (s *Server) SetUpDemo(ctx context.Context) (DemoKeys, error) {
	return s.setUpDemo(ctx, DemoDatasets())
}

// setUpDemo is SetUpDemo with the given demo datasets (tests use the small ones).
func (s *Server) setUpDemo(ctx context.Context, datasets []CreateDatasetRequest) (DemoKeys, error) {
	var out DemoKeys
	var names []string
	for _, req := range datasets {
		names = append(names, req.Name)
		if _, err := s.register(ctx, req, true); err != nil && !errors.Is(err, ErrExists) {
			return DemoKeys{}, err
		}
		st, err := s.ledger.Status(ctx, req.Name)
		if err != nil {
			return DemoKeys{}, err
		}
		if st.Remaining != nil && *st.Remaining == 0 {
			out.Spent = append(out.Spent, req.Name)
		}
	}
	if _, err := s.reg.RevokeDemoKeys(ctx); err != nil {
		return DemoKeys{}, err
	}
	s.forgetKeys()
	_, admin, err := s.mintKey(ctx, "demo admin", Admin, nil, true)
	if err != nil {
		return DemoKeys{}, err
	}
	_, analyst, err := s.mintKey(ctx, "demo analyst", Analyst, names, true)
	if err != nil {
		return DemoKeys{}, err
	}
	out.AdminKey, out.AnalystKey = admin, analyst
	return out, nil
}

// ErrNotDemo: ResetDemo was asked to start over on a database that holds more than the
// demo.
var ErrNotDemo = errors.New("server: the database holds more than the demo")

// ResetDemo starts the demo over on the SQLite file dsn: if the file holds the demo
// datasets and nothing else, it is moved aside (renamed dsn.reset-TIME, with its -wal
// and -shm files, never deleted) and the name returned, so that the next start creates
// a fresh database with fresh budgets; a missing file needs nothing ("" returned). A
// database with other datasets is refused with ErrNotDemo, and a PostgreSQL database
// with an error saying to use a fresh schema: budgets are never reset in place.
func ResetDemo(ctx context.Context, dsn string) (string, error) {
	if sqldb.IsPostgres(dsn) {
		return "", fmt.Errorf("server: --reset moves a SQLite --db aside; for PostgreSQL start over in a fresh schema (?search_path=…)")
	}
	if _, err := os.Stat(dsn); errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	db, err := sqldb.Open(ctx, dsn, nil)
	if err != nil {
		return "", err
	}
	reg, err := registry.Open(ctx, db)
	if err != nil {
		db.Close()
		return "", err
	}
	recs, err := reg.Datasets(ctx)
	db.Close()
	if err != nil {
		return "", err
	}
	for _, r := range recs {
		if !r.Demo {
			return "", fmt.Errorf("%w: %s holds the dataset %q, which --demo did not make: start the demo with a fresh --db instead", ErrNotDemo, dsn, r.Name)
		}
	}
	aside := dsn + ".reset-" + time.Now().UTC().Format("20060102T150405Z")
	for _, suffix := range []string{"-wal", "-shm", ""} {
		if err := os.Rename(dsn+suffix, aside+suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
	}
	return aside, nil
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
