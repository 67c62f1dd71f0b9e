package server

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/mechanism"
	"github.com/dpkit/dpkit/noise"
	"github.com/dpkit/dpkit/query"
)

// The service stands on two libraries: the budget ledger (package ledger) and the query
// layer (package query). Handlers reach them through the two small interfaces below;
// ledger.go and engine.go adapt the real packages to them.

// Accountant is the part of the budget ledger the service uses: one budget per dataset,
// named after it. Implementations are safe for concurrent use.
type Accountant interface {
	// Create makes the budget of a new dataset. It fails with an error matching
	// ErrExists if the budget exists.
	Create(ctx context.Context, budget string, total dpkit.Budget, policy PolicySpec) error
	// Spend checks the budget and records one release with its payload (the answer),
	// atomically, in one transaction. A release with an idempotency key already
	// recorded is not charged again (Receipt.Replayed) and its recorded payload is
	// returned.
	// Refusals match ErrBudgetExceeded; a key reused for a different cost matches
	// ErrKeyConflict.
	Spend(ctx context.Context, budget string, sp Spend) (Receipt, error)
	// Recorded returns the release recorded on budget with idempotency key key, as
	// the receipt of its replay (found = false if there is none). It reads only.
	Recorded(ctx context.Context, budget, key string) (rc Receipt, found bool, err error)
	// Check says, reading only, whether Spend(ctx, budget, sp) would be accepted now
	// (nil), or refused (an error matching ErrBudgetExceeded). Concurrent spends may
	// change the answer: Spend decides.
	Check(ctx context.Context, budget string, sp Spend) error
	// Costs returns what the budget's policy sets for the next query (cheap: the
	// definition is cached; the plan's next slot reads the budget's count).
	Costs(ctx context.Context, budget string) (Costs, error)
	// AnalystBudget returns the budget an analyst's queries on a dataset spend on: the
	// analyst's own sub-budget if a grant gave one, else the dataset's.
	AnalystBudget(ctx context.Context, dataset, keyID string) (string, error)
	// GrantBudget gives an analyst a budget of its own within the dataset's (ErrExists
	// if one with another total exists).
	GrantBudget(ctx context.Context, dataset, keyID string, total dpkit.Budget) error
	// Status reports what the budget has spent.
	Status(ctx context.Context, budget string) (Status, error)
	// Releases returns the part of the audit log that page selects, oldest first.
	Releases(ctx context.Context, budget string, page Page) ([]Release, error)
}

// Costs is what a budget's policy sets for each query.
type Costs struct {
	Total dpkit.Budget
	// PerQuery is the cost of the next query under the fixed policy (its calibrated
	// per-query cost) and the plan policy (its next slot); nil under the adaptive one.
	PerQuery *dpkit.Budget
	// PerQueryMu is μ0 of a fixed budget of Gaussian releases (nil otherwise).
	PerQueryMu *float64
}

// Errors an Accountant reports, and the service's own.
var (
	ErrBudgetExceeded = errors.New("server: budget exceeded")
	ErrKeyConflict    = errors.New("server: idempotency key already used for a different release")
	ErrNotFound       = errors.New("server: not found")
	ErrExists         = errors.New("server: already exists")
)

// Spend is one release to record.
type Spend struct {
	Cost      *dpkit.Budget        // nil: the budget's per-query cost under the fixed policy
	Key       string               // idempotency key, never empty
	Analyst   string               // the API key's id
	Mechanism mechanism.Descriptor // what the release ran (package mechanism), for audit
	Payload   []byte               // the answer, recorded with the release (see storedAnswer)
}

// Page selects releases of the audit log.
type Page struct {
	After   int64  // only releases numbered above After
	Analyst string // only those of this key id, if set
	Limit   int    // at most Limit (≤ 0: all)
}

// Receipt is a recorded release.
type Receipt struct {
	Number   int64 // the release's number among the dataset's releases, from 1
	Charged  dpkit.Budget
	Replayed bool   // the key was already recorded: nothing was charged now
	Status   Status // the budget after the release
	Payload  []byte // the payload recorded with the release (the first one, on a replay)
}

// Status is a budget's state.
type Status struct {
	Total     dpkit.Budget
	Spent     dpkit.Budget // composed total of the recorded releases (never below the truth)
	SpentMu   *float64     // Gaussian policies: the releases are jointly SpentMu-GDP (rounded up)
	Releases  int64
	Policy    PolicySpec
	Remaining *int64         // releases of the per-query cost that still fit; nil if not applicable
	PerQuery  *dpkit.Budget  // the fixed policy's per-query cost; the plan's next slot
	Costs     []dpkit.Budget // the recorded costs, for the privacy curve (grouped or not)
	Counts    []int64        // Counts[i] releases of cost Costs[i]
}

// Release is one entry of a budget's audit log.
type Release struct {
	Number    int64 // among the dataset's releases, from 1
	Time      time.Time
	Charged   dpkit.Budget
	Analyst   string
	Key       string
	Mechanism mechanism.Descriptor
	Payload   []byte // the answer recorded with the release; empty for releases recorded before schema 2 of the ledger
}

// Engine is the part of the query layer the service uses.
type Engine interface {
	// Load reads a table of the given schema from CSV text.
	Load(schema query.Schema, r io.Reader) (Table, error)
}

// Table is a loaded dataset.
type Table interface {
	// Prepare parses sql and checks it against the table, whose name in queries is
	// name. Bad SQL is a *query.Error with the byte offset of the problem.
	Prepare(name, sql string) (Prepared, error)
}

// Prepared is a parsed, checked query.
type Prepared interface {
	// Release computes the noisy answer with the release options o (cost and noise),
	// until ctx ends.
	Release(ctx context.Context, o query.ReleaseOptions, src noise.Source) (Answer, error)
	// CostForAccuracy returns the cheapest options whose 95% intervals are at most ±h
	// (query.Plan.CostForAccuracy); HalfWidth the half-width of the options o.
	CostForAccuracy(h float64, gaussian bool, delta float64) (query.ReleaseOptions, error)
	HalfWidth(o query.ReleaseOptions) (float64, error)
}

// Answer is the noisy answer to a query: the part of the response that must be the same
// when a release is replayed.
type Answer struct {
	Aggregates []string  `json:"aggregates,omitempty"`
	GroupBy    []string  `json:"group_by,omitempty"` // the GROUP BY columns, in order
	Result     *float64  `json:"result"`
	Values     []float64 `json:"values,omitempty"`
	Groups     []Group   `json:"groups,omitempty"`
	Mechanism  string    `json:"mechanism"`
	Scale      float64   `json:"scale"`
	// Descriptor is the mechanisms' typed descriptor, recorded in the ledger (not part
	// of the stored answer).
	Descriptor mechanism.Descriptor `json:"-"`
	CI95       any                  `json:"ci95"`
	Mu         *float64             `json:"mu,omitempty"`      // a Gaussian release's μ
	Epsilon    *float64             `json:"epsilon,omitempty"` // the adaptive policy's requested ε
	Delta      *float64             `json:"delta,omitempty"`
	// The request's other cost fields, compared when a key is replayed.
	RequestMu       *float64 `json:"request_mu,omitempty"`
	RequestAccuracy *float64 `json:"request_accuracy,omitempty"`
	RequestGaussian bool     `json:"request_gaussian,omitempty"`
}
