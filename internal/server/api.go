package server

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/datasource"
	"github.com/dpkit/dpkit/internal/registry"
	"github.com/dpkit/dpkit/query"
)

// This file holds the JSON shapes of the HTTP API (the contract of issue #6) and the
// validation of a dataset registration.

// ColumnSpec declares one column: "type" is "int", "float" or "string"; numeric columns
// need "min" and "max"; "domain" is the public list of values a column may be grouped by.
type ColumnSpec struct {
	Type   string   `json:"type"`
	Min    *float64 `json:"min,omitempty"`
	Max    *float64 `json:"max,omitempty"`
	Domain []any    `json:"domain,omitempty"`
}

// UnitSpec is the privacy unit: the column identifying a person and the most rows one
// person may contribute; for grouped queries, optionally the most groups one person
// counts in (max_groups, also the max_partitions of partition selection) and the most
// rows in each (max_rows_per_group).
type UnitSpec struct {
	Column          string `json:"column"`
	MaxRows         int    `json:"max_rows"`
	MaxGroups       int    `json:"max_groups,omitempty"`
	MaxRowsPerGroup int    `json:"max_rows_per_group,omitempty"`
}

// PolicySpec names the ledger policy of a dataset's budget (docs/service.md):
//
//   - "fixed" (the default): max_queries releases, each at the cost (ε0, δ0) calibrated
//     at registration by KOV's exact composition, δ0 = δ/(2K); with "pure": true every
//     release is pure ε-DP (δ0 = 0, a larger ε0; queries that need δ > 0 — GROUP BY by
//     partition selection — are refused); with "mechanism": "gaussian" each release is
//     μ0-GDP, K of them composing exactly to the total (μ0 = μ/√K);
//   - "plan": the declared list of per-query costs "plan", consumed in order;
//   - "adaptive": each query chooses its cost (ε, δ, or an accuracy) under a privacy
//     filter: "basic" (the default: Σε ≤ ε, Σδ ≤ δ), "advanced" (with "filter_delta"),
//     or "gaussian" (queries name "mu" or an accuracy; Σμ² ≤ μ², Smith–Thakurta).
type PolicySpec struct {
	Mode        string         `json:"mode"`
	MaxQueries  int64          `json:"max_queries,omitempty"`
	Mechanism   string         `json:"mechanism,omitempty"` // fixed: "laplace" (default) or "gaussian"
	Pure        bool           `json:"pure,omitempty"`      // fixed: every release is pure ε-DP, δ0 = 0
	Filter      string         `json:"filter,omitempty"`    // adaptive: "basic" (default), "advanced", "gaussian"
	FilterDelta float64        `json:"filter_delta,omitempty"`
	Plan        []dpkit.Budget `json:"plan,omitempty"`
}

// DatasetSpec is the body of POST /v1/datasets without its data. It is stored as JSON.
type DatasetSpec struct {
	Name        string                `json:"name"`
	Columns     map[string]ColumnSpec `json:"columns"`
	PrivacyUnit *UnitSpec             `json:"privacy_unit,omitempty"`
	Budget      *dpkit.Budget         `json:"budget"`
	Policy      *PolicySpec           `json:"policy,omitempty"`
}

// CreateDatasetRequest is the body of POST /v1/datasets: the spec and exactly one of
// "csv" (the CSV text, header first), "path" (a CSV file on the server) and "table" (a
// PostgreSQL table, snapshotted at registration).
type CreateDatasetRequest struct {
	DatasetSpec
	CSV   string       `json:"csv,omitempty"`
	Path  string       `json:"path,omitempty"`
	Table *TableSource `json:"table,omitempty"`
}

// TableSource names a PostgreSQL table (or view) to register as a dataset: the URL of its
// database and its name, "schema.table" or "table" (taken literally, case-sensitive).
// Only the declared columns are read, once, at registration (see datasource.Snapshot).
type TableSource = datasource.Table

// DatasetInfo describes a dataset to its readers: never its rows.
type DatasetInfo struct {
	Name        string                `json:"name"`
	Columns     map[string]ColumnSpec `json:"columns"`
	PrivacyUnit *UnitSpec             `json:"privacy_unit,omitempty"`
	Budget      dpkit.Budget          `json:"budget"`
	Policy      PolicySpec            `json:"policy"`
	Source      string                `json:"source,omitempty"` // "csv", the path or the table's origin; admins only
	Live        bool                  `json:"live,omitempty"`   // a live table: queried inside its database, its rows may change
	Demo        bool                  `json:"demo,omitempty"`   // registered by dpkit serve --demo
}

// QueryRequest is the body of POST /v1/datasets/{name}/query. Under an adaptive policy
// the query names its cost: "epsilon" (and "delta"), or "mu" under the Gaussian filter,
// or instead an accuracy, the half-width of the 95% intervals wanted (the cheapest cost
// meeting it is charged); "mechanism": "gaussian" asks for Gaussian noise under the
// basic or advanced filter. Under the fixed and plan policies the cost is set; an
// accuracy is then checked against it.
type QueryRequest struct {
	SQL            string        `json:"sql"`
	Epsilon        *float64      `json:"epsilon,omitempty"`
	Delta          *float64      `json:"delta,omitempty"`
	Mu             *float64      `json:"mu,omitempty"`
	Mechanism      string        `json:"mechanism,omitempty"`
	Accuracy       *AccuracySpec `json:"accuracy,omitempty"`
	IdempotencyKey string        `json:"idempotency_key,omitempty"`
}

// AccuracySpec asks for an accuracy instead of a cost.
type AccuracySpec struct {
	CI95HalfWidth float64 `json:"ci95_halfwidth"`
}

// Group is one group of a grouped answer. For a query of one aggregate and at most one
// grouping column it has the single-aggregate shape {"key": "eng", "value": v, "ci95":
// [lo, hi]}; otherwise {"key": [one value per GROUP BY column], "values": [one per
// aggregate], "ci95": [one interval per aggregate, null where the error depends on the
// data]}.
type Group struct {
	Key    any       `json:"key"`
	Value  *float64  `json:"value,omitempty"`
	Values []float64 `json:"values,omitempty"`
	CI95   any       `json:"ci95,omitempty"`
}

// GrantRequest is the optional body of PUT /v1/datasets/{name}/grants/{key}: a budget
// of the analyst's own within the dataset's (a ledger sub-budget: each of the analyst's
// releases must fit both).
type GrantRequest struct {
	Budget *dpkit.Budget `json:"budget,omitempty"`
}

// QueryResponse is the answer to a query. Result is the noisy aggregate (null for a
// grouped answer, whose values are in Groups); CI95 is a 95% interval for the noise;
// Charged is what this release cost, Spent the budget's composed total after it.
type QueryResponse struct {
	Aggregates       []string     `json:"aggregates"`         // the aggregates' texts, SELECT order
	GroupBy          []string     `json:"group_by,omitempty"` // the GROUP BY columns, in order
	Result           *float64     `json:"result"`
	Values           []float64    `json:"values,omitempty"` // several aggregates, ungrouped
	Groups           []Group      `json:"groups,omitempty"`
	Mechanism        string       `json:"mechanism"`
	Scale            float64      `json:"scale"`
	CI95             any          `json:"ci95"`         // [lo, hi]; a list per aggregate for several; null for quantiles
	Mu               *float64     `json:"mu,omitempty"` // a Gaussian release's μ (GDP)
	Charged          dpkit.Budget `json:"charged"`
	Spent            dpkit.Budget `json:"spent"`
	RemainingQueries *int64       `json:"remaining_queries"`
	Release          int64        `json:"release"`         // sequence number in the ledger
	IdempotencyKey   string       `json:"idempotency_key"` // as given, or generated
}

// BudgetResponse is the body of GET /v1/datasets/{name}/budget.
type BudgetResponse struct {
	Total            dpkit.Budget  `json:"total"`
	Spent            dpkit.Budget  `json:"spent"`
	Releases         int64         `json:"releases"`
	Policy           PolicySpec    `json:"policy"`
	RemainingQueries *int64        `json:"remaining_queries"`
	PerQuery         *dpkit.Budget `json:"per_query,omitempty"` // the fixed policy's cost; the plan's next slot
}

// ReleaseInfo is one entry of the audit log, GET /v1/datasets/{name}/releases.
type ReleaseInfo struct {
	Release   int64           `json:"release"` // the release's number among the dataset's releases
	Time      string          `json:"time"`
	Analyst   string          `json:"analyst"` // the name of the key that asked
	KeyID     string          `json:"key_id"`
	Charged   dpkit.Budget    `json:"charged"`
	SQL       string          `json:"sql,omitempty"`
	Mechanism string          `json:"mechanism,omitempty"`
	Answer    json.RawMessage `json:"answer,omitempty"`
}

// ReleasesResponse is a page of the audit log; NextCursor (the "cursor" of the next
// page) is null on the last page.
type ReleasesResponse struct {
	Releases   []ReleaseInfo `json:"releases"`
	NextCursor *string       `json:"next_cursor"`
}

// CurvePoint is one point (ε, δ(ε)) of the privacy curve of what has been spent.
type CurvePoint struct {
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
}

// CurveResponse is the body of GET /v1/datasets/{name}/curve: the optimal privacy curve
// δ(ε) of the releases recorded so far (KOV Thm 3.3), and the total budget.
type CurveResponse struct {
	Points  []CurvePoint `json:"points"`
	Total   dpkit.Budget `json:"total"`
	Exact   bool         `json:"exact"`
	Theorem string       `json:"theorem"`
}

// Role is what an API key may do: Admin or Analyst.
type Role = registry.Role

// Roles.
const (
	Admin   = registry.Admin   // registers datasets, manages keys and grants; sees every dataset
	Analyst = registry.Analyst // queries the datasets granted to it; never sees rows
)

// KeyInfo describes an API key, never its secret.
type KeyInfo struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Role    Role      `json:"role"`
	Created time.Time `json:"created"`
	Revoked bool      `json:"revoked,omitempty"`
	Demo    bool      `json:"demo,omitempty"` // minted by dpkit serve --demo
	// Datasets are the datasets granted to the key (GET /v1/keys, POST /v1/keys).
	Datasets []string `json:"datasets"`
}

// CreateKeyRequest is the body of POST /v1/keys.
type CreateKeyRequest struct {
	Name     string   `json:"name"`
	Role     Role     `json:"role"`
	Datasets []string `json:"datasets"`
}

// CreateKeyResponse returns a new key: the secret is shown once and stored only hashed.
type CreateKeyResponse struct {
	KeyInfo
	Key string `json:"key"`
}

var nameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// checkName validates a dataset name: it is also the table name in queries.
func checkName(field, name string) error {
	if !nameRE.MatchString(name) {
		return &dpkit.ParamError{Pkg: "server", Name: field, Value: name, Want: "1 to 63 letters, digits and _, not starting with a digit"}
	}
	return nil
}

// maxQueriesLimit bounds policy.max_queries.
const maxQueriesLimit = 1_000_000_000

// validate checks the spec and returns the query schema it declares; every error is a
// *dpkit.ParamError naming the field.
func (s *DatasetSpec) validate() (query.Schema, error) {
	var schema query.Schema
	if err := checkName("name", s.Name); err != nil {
		return schema, err
	}
	if len(s.Columns) == 0 {
		return schema, &dpkit.ParamError{Pkg: "server", Name: "columns", Value: 0, Want: "at least one column"}
	}
	names := make([]string, 0, len(s.Columns))
	for n := range s.Columns {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := s.Columns[n]
		t, err := query.ParseType(c.Type)
		if err != nil {
			return schema, &dpkit.ParamError{Pkg: "server", Name: fmt.Sprintf("columns[%s].type", n), Value: c.Type, Want: `"int", "float" or "string"`}
		}
		col := query.Column{Name: n, Type: t}
		if t != query.String {
			if c.Min == nil || c.Max == nil {
				return schema, &dpkit.ParamError{Pkg: "server", Name: fmt.Sprintf("columns[%s].min", n), Value: nil, Want: "bounds min and max for a numeric column"}
			}
			col.Min, col.Max = *c.Min, *c.Max
		} else if c.Min != nil || c.Max != nil {
			return schema, &dpkit.ParamError{Pkg: "server", Name: fmt.Sprintf("columns[%s].min", n), Value: "set", Want: "no bounds on a string column"}
		}
		for i, v := range c.Domain {
			text, err := domainText(v)
			if err != nil {
				return schema, &dpkit.ParamError{Pkg: "server", Name: fmt.Sprintf("columns[%s].domain[%d]", n, i), Value: v, Want: "a string or a number"}
			}
			col.Domain = append(col.Domain, text)
		}
		schema.Columns = append(schema.Columns, col)
	}
	if u := s.PrivacyUnit; u != nil {
		schema.Unit = &query.PrivacyUnit{Column: u.Column, MaxRows: u.MaxRows, MaxGroups: u.MaxGroups, MaxRowsPerGroup: u.MaxRowsPerGroup}
	}
	if err := schema.Validate(); err != nil {
		return schema, err
	}
	if s.Budget == nil {
		return schema, &dpkit.ParamError{Pkg: "server", Name: "budget", Value: nil, Want: `an object {"epsilon": ε, "delta": δ}`}
	}
	if err := dpkit.CheckPositive("budget.epsilon", s.Budget.Epsilon); err != nil {
		return schema, dpkit.InPackage("server", err)
	}
	if err := dpkit.CheckDelta("budget.delta", s.Budget.Delta); err != nil {
		return schema, dpkit.InPackage("server", err)
	}
	if s.Budget.Delta >= 1 {
		return schema, &dpkit.ParamError{Pkg: "server", Name: "budget.delta", Value: s.Budget.Delta, Want: "in [0, 1)"}
	}
	if s.Policy == nil {
		s.Policy = &PolicySpec{Mode: "fixed"}
	}
	return schema, s.Policy.validate(*s.Budget)
}

// maxPlan bounds policy.plan.
const maxPlan = 100_000

// validate checks the policy against the total and fills its defaults; every error is
// a *dpkit.ParamError naming the field ("policy.…").
func (p *PolicySpec) validate(total dpkit.Budget) error {
	perr := func(field string, v any, want string) error {
		return &dpkit.ParamError{Pkg: "server", Name: "policy." + field, Value: v, Want: want}
	}
	if p.Mode != "fixed" && p.Mode != "" && p.Mechanism != "" {
		return perr("mechanism", p.Mechanism, "absent except with the fixed policy (an adaptive query may ask for \"mechanism\": \"gaussian\", or use the gaussian filter)")
	}
	if p.Mode != "adaptive" && (p.Filter != "" || p.FilterDelta != 0) {
		return perr("filter", p.Filter, "absent except with the adaptive policy")
	}
	if p.Mode != "plan" && p.Plan != nil {
		return perr("plan", len(p.Plan), "absent except with the plan policy")
	}
	if p.Mode != "fixed" && p.Mode != "" && p.Pure {
		return perr("pure", true, "absent except with the fixed policy (a plan's costs and an adaptive query's delta say δ = 0 themselves)")
	}
	switch p.Mode {
	case "", "fixed":
		p.Mode = "fixed"
		if p.MaxQueries == 0 {
			return perr("max_queries", nil, fmt.Sprintf("the number of queries the budget is split into, in [1, %d] (the fixed policy, the default, needs it)", maxQueriesLimit))
		}
		if err := dpkit.CheckCount("policy.max_queries", p.MaxQueries, maxQueriesLimit); err != nil {
			return dpkit.InPackage("server", err)
		}
		switch p.Mechanism {
		case "", "laplace":
			p.Mechanism = ""
			// With δ = 0 the per-query δ0 = δ/(2K) is 0 anyway: the releases are pure.
			p.Pure = p.Pure || total.Delta == 0
		case "gaussian":
			if p.Pure {
				return perr("pure", true, `absent with "mechanism": "gaussian" (a Gaussian release is (ε, δ)-DP with δ > 0, never pure ε-DP)`)
			}
			if total.Delta == 0 {
				return &dpkit.ParamError{Pkg: "server", Name: "budget.delta", Value: 0.0, Want: "> 0 for Gaussian releases"}
			}
		default:
			return perr("mechanism", p.Mechanism, `"laplace" or "gaussian"`)
		}
	case "plan":
		if p.MaxQueries != 0 {
			return perr("max_queries", p.MaxQueries, "absent under the plan policy (the plan lists the queries)")
		}
		if len(p.Plan) == 0 || len(p.Plan) > maxPlan {
			return perr("plan", len(p.Plan), fmt.Sprintf("a list of 1 to %d per-query costs {\"epsilon\": ε, \"delta\": δ}", maxPlan))
		}
		for i, c := range p.Plan {
			if err := dpkit.CheckPositive(fmt.Sprintf("policy.plan[%d].epsilon", i), c.Epsilon); err != nil {
				return dpkit.InPackage("server", err)
			}
			if err := dpkit.CheckDelta(fmt.Sprintf("policy.plan[%d].delta", i), c.Delta); err != nil {
				return dpkit.InPackage("server", err)
			}
		}
	case "adaptive":
		if p.MaxQueries != 0 {
			return perr("max_queries", p.MaxQueries, "absent under the adaptive policy (each query names its cost)")
		}
		switch p.Filter {
		case "", "basic":
			p.Filter = "basic"
			if p.FilterDelta != 0 {
				return perr("filter_delta", p.FilterDelta, "absent with the basic filter")
			}
		case "advanced":
			if !(p.FilterDelta > 0) || p.FilterDelta > total.Delta || p.FilterDelta >= 1 {
				return perr("filter_delta", p.FilterDelta, fmt.Sprintf("in (0, %g]: the share of budget.delta the advanced filter spends", total.Delta))
			}
		case "gaussian":
			if p.FilterDelta != 0 {
				return perr("filter_delta", p.FilterDelta, "absent with the gaussian filter")
			}
			if total.Delta == 0 {
				return &dpkit.ParamError{Pkg: "server", Name: "budget.delta", Value: 0.0, Want: "> 0 for the gaussian filter"}
			}
		default:
			return perr("filter", p.Filter, `"basic", "advanced" or "gaussian"`)
		}
	default:
		return perr("mode", p.Mode, `"fixed", "plan" or "adaptive"`)
	}
	return nil
}

// gaussian reports whether queries under the policy get Gaussian noise by default.
func (p PolicySpec) gaussian() bool { return p.Mechanism == "gaussian" || p.Filter == "gaussian" }

// domainText turns a JSON domain value into the text query.Column.Domain expects.
func domainText(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "", fmt.Errorf("not finite")
		}
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case json.Number:
		return v.String(), nil
	}
	return "", fmt.Errorf("not a string or number")
}

// info returns what readers of the dataset may see.
func (s *DatasetSpec) info(rec registry.DatasetRecord, admin bool) DatasetInfo {
	d := DatasetInfo{Name: s.Name, Columns: s.Columns, PrivacyUnit: s.PrivacyUnit, Budget: *s.Budget, Policy: *s.Policy, Demo: rec.Demo, Live: rec.LiveURL != ""}
	if admin {
		switch {
		case rec.Path != "":
			d.Source = rec.Path
		case rec.Origin != "":
			d.Source = rec.Origin
		default:
			d.Source = "csv"
		}
	}
	return d
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
