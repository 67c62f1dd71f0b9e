package ledger

import (
	"context"
	"time"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/mechanism"
)

// Definition is the immutable part of a budget, fixed at creation.
type Definition struct {
	ID      string       `json:"id"`
	Parent  string       `json:"parent,omitempty"` // the dataset budget of an analyst sub-budget
	Total   dpkit.Budget `json:"total"`
	Policy  Policy       `json:"policy"`
	Created time.Time    `json:"created"`
}

// Release is one recorded release: its privacy description, who asked, when, and its
// idempotency key. Releases are append-only.
type Release struct {
	Seq int64 `json:"seq"` // position in the ledger (increasing in commit order)
	// Number is the release's position among the releases charged to its top-level
	// budget, from 1 (for a dataset's budget: the dataset's release number; it says
	// nothing of other budgets' activity, which Seq does). Set when recorded.
	Number int64        `json:"number"`
	Budget string       `json:"budget"` // the budget it was spent on
	Cost   dpkit.Budget `json:"cost"`   // its (ε, δ)
	// Mechanism describes the mechanism the release ran (package mechanism's typed,
	// versioned descriptor, e.g. {"kind":"gaussian_noise","version":1,"sigma":100,
	// "sensitivity":1}); the zero Descriptor when none was given.
	Mechanism mechanism.Descriptor `json:"mechanism,omitzero"`
	Analyst   string               `json:"analyst"` // who asked (optional)
	Key       string               `json:"key"`     // idempotency key (optional)
	Time      time.Time            `json:"time"`
	// Payload is opaque data recorded with the release in the same transaction
	// (optional; e.g. the answer that the release published). It is not part of the
	// release's identity: a replay returns the payload recorded first.
	Payload []byte `json:"payload,omitempty"`
}

// sameContent reports whether a recorded release and a new request describe the same
// request. The payload is not compared: it is what the release produced, which may
// differ between attempts.
func sameContent(recorded, req Release) bool {
	return recorded.Budget == req.Budget && recorded.Cost == req.Cost && sameMechanism(recorded.Mechanism, req.Mechanism) &&
		recorded.Analyst == req.Analyst && recorded.Key == req.Key
}

// sameMechanism compares the mechanisms of a recorded release and of a request: equal
// descriptors, or a recorded note (kind text) against a typed descriptor. A release
// recorded before the ledger kept descriptors holds its old text as a note (the
// migration of schema 4); a retry of it today describes the same release with a typed
// descriptor, which the note cannot be compared with. A note never matches another note
// or no mechanism.
func sameMechanism(recorded, req mechanism.Descriptor) bool {
	if recorded.Equal(req) {
		return true
	}
	_, note := recorded.Params.(mechanism.Text)
	_, reqNote := req.Params.(mechanism.Text)
	return note && !reqNote && !req.IsZero()
}

// ReleaseFilter selects releases of a budget (Store.Releases, Ledger.Releases). The zero
// value selects all.
type ReleaseFilter struct {
	After       int64  // only Seq > After
	AfterNumber int64  // only Number > AfterNumber
	Analyst     string // only those asked by Analyst, if set
	Limit       int    // at most Limit, the first ones (≤ 0: all)
}

// Decide is called by Store.Spend inside its transaction with the current statistics
// of the budget chain (root first). It returns their new statistics, or an error that
// aborts the spend.
type Decide func(chain []Stats) ([]Stats, error)

// Store is the persistence of a ledger. Implementations (ledger/sqlite,
// ledger/postgres) must be safe for concurrent use, by several goroutines and by
// several processes sharing one database. The shared contract test suite is
// ledger/storetest.
type Store interface {
	// Create records a new budget with zero statistics. It returns an error matching
	// ErrBudgetExists if the ID is taken. The ledger has checked the parent exists.
	Create(ctx context.Context, def Definition) error
	// Definition returns a budget's definition, or an error matching ErrUnknownBudget.
	Definition(ctx context.Context, id string) (Definition, error)
	// Definitions returns every budget, ordered by ID.
	Definitions(ctx context.Context) ([]Definition, error)
	// Stats returns a budget's current statistics, or an error matching ErrUnknownBudget.
	Stats(ctx context.Context, id string) (Stats, error)
	// Spend is one atomic step. chain lists the budget the release is spent on and its
	// ancestors, root first (rel.Budget is the last). In one durable transaction that
	// excludes every other Spend on the same root, Spend
	//  1. if rel.Key is not empty and a release with that key is recorded for
	//     rel.Budget, returns it and replayed = true, changing nothing;
	//  2. otherwise calls decide with the chain's statistics; if it fails, returns its
	//     error, changing nothing;
	//  3. otherwise records rel (assigning Seq, and Number = the Count of chain[0]'s new
	//     statistics; with its Payload, stored verbatim — nil and empty are the same)
	//     and the new statistics, and commits before returning.
	// Releases and replays return the payload recorded (nil when empty).
	Spend(ctx context.Context, chain []string, rel Release, decide Decide) (recorded Release, replayed bool, err error)
	// Releases returns the releases spent on budget id (a top-level budget: also on its
	// sub-budgets) that f selects, in Seq order.
	Releases(ctx context.Context, id string, f ReleaseFilter) ([]Release, error)
	// Release returns the release recorded on budget with idempotency key key, and
	// found = false if there is none.
	Release(ctx context.Context, budget, key string) (rel Release, found bool, err error)
	// Close releases the store's resources.
	Close() error
}
