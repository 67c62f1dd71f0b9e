package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
	"github.com/dpkit/dpkit/mechanism"
)

// Ledger is a privacy-budget ledger over a Store. It is safe for concurrent use, and
// several Ledgers (in several processes) may share one database: every spend is
// decided and recorded in one transaction of the store.
type Ledger struct {
	store Store
	now   func() time.Time

	mu    sync.Mutex
	cache map[string]*budget // definitions are immutable: cached once read
}

// budget is a definition with its accountant.
type budget struct {
	def Definition
	acc Accountant
}

// New returns a ledger over store. Closing the store is the caller's business.
func New(store Store) *Ledger {
	return &Ledger{store: store, now: time.Now, cache: map[string]*budget{}}
}

// Limits on the strings a ledger records.
const (
	MaxIDLen        = 128
	MaxKeyLen       = 256
	MaxAnalystLen   = 256
	MaxMechanismLen = 4096
	MaxPayloadLen   = 64 << 20 // bytes of Request.Payload
)

// Spec describes a budget to create.
type Spec struct {
	// ID names the budget: 1 to 128 characters from A–Z a–z 0–9 . _ : @ -.
	ID string
	// Parent, if set, makes this an analyst sub-budget of that top-level budget: each
	// spend on it must fit both budgets, and is recorded once and charged to both.
	Parent string
	// Total is the budget's total (ε, δ).
	Total dpkit.Budget
	// Policy is how releases are accounted (see Policy).
	Policy Policy
}

// Create validates spec, calibrates its policy and records the budget. An unmeetable
// policy (e.g. a plan whose composition exceeds the total) is a *dpkit.InfeasibleError.
func (l *Ledger) Create(ctx context.Context, spec Spec) (Definition, error) {
	if err := checkID("id", spec.ID); err != nil {
		return Definition{}, err
	}
	if spec.Parent != "" {
		if err := checkID("parent", spec.Parent); err != nil {
			return Definition{}, err
		}
		parent, err := l.budget(ctx, spec.Parent)
		if err != nil {
			return Definition{}, err
		}
		if parent.def.Parent != "" {
			return Definition{}, &dpkit.ParamError{Pkg: "ledger", Name: "parent", Value: spec.Parent, Want: "a top-level budget (sub-budgets do not nest)"}
		}
	}
	p, err := resolve(spec.Total, spec.Policy)
	if err != nil {
		return Definition{}, err
	}
	def := Definition{ID: spec.ID, Parent: spec.Parent, Total: spec.Total, Policy: p, Created: l.now().UTC().Truncate(time.Microsecond)}
	if err := l.store.Create(ctx, def); err != nil {
		return Definition{}, err
	}
	return def, nil
}

// budget returns the cached definition and accountant of id.
func (l *Ledger) budget(ctx context.Context, id string) (*budget, error) {
	l.mu.Lock()
	b, ok := l.cache[id]
	l.mu.Unlock()
	if ok {
		return b, nil
	}
	def, err := l.store.Definition(ctx, id)
	if err != nil {
		return nil, err
	}
	acc, err := NewAccountant(def.Total, def.Policy)
	if err != nil {
		return nil, fmt.Errorf("%w: budget %q has an invalid policy: %v", ErrNotLedger, id, err)
	}
	b = &budget{def: def, acc: acc}
	l.mu.Lock()
	l.cache[id] = b
	l.mu.Unlock()
	return b, nil
}

// chain returns the budget id and its parent, root first.
func (l *Ledger) chain(ctx context.Context, id string) ([]*budget, error) {
	if err := checkID("budget", id); err != nil {
		return nil, err
	}
	b, err := l.budget(ctx, id)
	if err != nil {
		return nil, err
	}
	if b.def.Parent == "" {
		return []*budget{b}, nil
	}
	p, err := l.budget(ctx, b.def.Parent)
	if err != nil {
		return nil, err
	}
	return []*budget{p, b}, nil
}

// Definition returns the definition of budget id.
func (l *Ledger) Definition(ctx context.Context, id string) (Definition, error) {
	if err := checkID("budget", id); err != nil {
		return Definition{}, err
	}
	b, err := l.budget(ctx, id)
	if err != nil {
		return Definition{}, err
	}
	return b.def, nil
}

// Request asks to spend one release on a budget.
type Request struct {
	Budget    string               // the budget (or analyst sub-budget) to spend on
	Cost      dpkit.Budget         // the release's (ε, δ): ε finite ≥ 0, δ in [0, 1]
	Mechanism mechanism.Descriptor // optional: what the release ran (zero: not described)
	Analyst   string               // optional: who asks
	Key       string               // optional idempotency key, unique per budget
	// Payload is optional opaque data (at most MaxPayloadLen bytes) recorded with the
	// release in the same transaction, e.g. the answer the release is about to
	// publish, so that recording the release and its result costs one commit. It is
	// not compared for idempotency: a replay returns the payload recorded first.
	Payload []byte
}

// Receipt is the outcome of an accepted spend.
type Receipt struct {
	Release Release `json:"release"`
	// Replayed is true when the idempotency key was already recorded with the same
	// content: the original release is returned and nothing is charged.
	Replayed bool `json:"replayed"`

	after *Stats // the budget's statistics right after this release (nil when replayed)
}

// Spend decides and records one release atomically: in one transaction it checks the
// budget (and the parent budget of an analyst sub-budget) under its policy, with all
// recorded releases plus this one, and records the release, committing durably before
// it returns. The release's result may be published only after Spend returns.
//
// A release that does not fit is refused with a *BudgetExceededError (matching
// ErrBudgetExceeded and dpkit.ErrInfeasible) saying what is left; nothing is recorded.
// The same idempotency key never charges twice: the same key with the same content
// returns the original release (Receipt.Replayed), with different content an error
// matching ErrIdempotencyConflict. Invalid input is a *dpkit.ParamError; an unknown
// budget matches ErrUnknownBudget.
func (l *Ledger) Spend(ctx context.Context, req Request) (Receipt, error) {
	if err := checkRequest(req); err != nil {
		return Receipt{}, err
	}
	chain, err := l.chain(ctx, req.Budget)
	if err != nil {
		return Receipt{}, err
	}
	ids := make([]string, len(chain))
	for i, b := range chain {
		ids[i] = b.def.ID
	}
	rel := l.release(req)
	var after Stats // the last statistics decide returned for req.Budget
	decide := func(stats []Stats) ([]Stats, error) {
		out, err := decideChain(chain, stats, rel)
		if err == nil {
			after = out[len(out)-1]
		}
		return out, err
	}
	got, replayed, err := l.store.Spend(ctx, ids, rel, decide)
	if err != nil {
		return Receipt{}, err
	}
	if replayed {
		return l.replay(got, rel)
	}
	if len(got.Payload) == 0 {
		got.Payload = nil
	}
	return Receipt{Release: got, after: &after}, nil
}

// release is the release req asks for, as Spend records it.
func (l *Ledger) release(req Request) Release {
	return Release{Budget: req.Budget, Cost: dpkit.Budget{Epsilon: req.Cost.Epsilon + 0, Delta: req.Cost.Delta + 0}, Mechanism: req.Mechanism, Analyst: req.Analyst, Key: req.Key,
		Time: l.now().UTC().Truncate(time.Microsecond), Payload: req.Payload}
}

// decideChain charges rel to each budget of chain (root first) given their statistics,
// and returns their new statistics, or the refusal (naming the budget that refused).
func decideChain(chain []*budget, stats []Stats, rel Release) ([]Stats, error) {
	if len(stats) != len(chain) {
		return nil, fmt.Errorf("ledger: store returned %d statistics for a chain of %d budgets", len(stats), len(chain))
	}
	out := make([]Stats, len(chain))
	for i, b := range chain {
		charged, err := charge(b.acc, stats[i], rel)
		if err != nil {
			var ex *BudgetExceededError
			if errors.As(err, &ex) {
				ex.Budget = b.def.ID
			}
			return nil, err
		}
		out[i] = stats[i].Add(charged)
	}
	return out, nil
}

// Check says, without recording or charging anything, what Spend(ctx, req) would do
// now: for an idempotency key already recorded, the release recorded with it
// (Receipt.Replayed, with its payload) or an error matching ErrIdempotencyConflict if
// req differs from it; otherwise a refusal (*BudgetExceededError) if the release does
// not fit, or nil error and the receipt of the release Spend would record (Seq and
// Number unset). It is a snapshot: concurrent spends may change the answer, and Spend
// decides. A service checks before it computes a release's result, so that a request
// that would be refused costs no work on the data.
func (l *Ledger) Check(ctx context.Context, req Request) (Receipt, error) {
	if err := checkRequest(req); err != nil {
		return Receipt{}, err
	}
	chain, err := l.chain(ctx, req.Budget)
	if err != nil {
		return Receipt{}, err
	}
	rel := l.release(req)
	if req.Key != "" {
		got, found, err := l.Recorded(ctx, req.Budget, req.Key)
		if err != nil {
			return Receipt{}, err
		}
		if found {
			return l.replay(got, rel)
		}
	}
	stats := make([]Stats, len(chain))
	for i, b := range chain {
		if stats[i], err = l.store.Stats(ctx, b.def.ID); err != nil {
			return Receipt{}, err
		}
	}
	if _, err := decideChain(chain, stats, rel); err != nil {
		return Receipt{}, err
	}
	return Receipt{Release: rel}, nil
}

// Recorded returns the release recorded on budget with idempotency key key, and
// found = false if there is none.
func (l *Ledger) Recorded(ctx context.Context, budget, key string) (rel Release, found bool, err error) {
	if _, err := l.chain(ctx, budget); err != nil {
		return Release{}, false, err
	}
	if err := checkText("key", key, MaxKeyLen); err != nil {
		return Release{}, false, err
	}
	rel, found, err = l.store.Release(ctx, budget, key)
	if len(rel.Payload) == 0 {
		rel.Payload = nil
	}
	return rel, found, err
}

// replay returns the receipt of a release recorded with rel's key, or the conflict
// error if rel asks for something else.
func (l *Ledger) replay(got, rel Release) (Receipt, error) {
	if len(got.Payload) == 0 {
		got.Payload = nil
	}
	if !sameContent(got, rel) {
		return Receipt{}, fmt.Errorf("%w: key %q on budget %q was recorded (seq %d) for %v mechanism %q analyst %q; this request is %v mechanism %q analyst %q",
			ErrIdempotencyConflict, rel.Key, rel.Budget, got.Seq, got.Cost, got.Mechanism, got.Analyst, rel.Cost, rel.Mechanism, rel.Analyst)
	}
	return Receipt{Release: got, Replayed: true}, nil
}

// charge asks acc to charge release r: with the release's description where the
// accountant checks it (a planned mechanism), else by its cost.
func charge(acc Accountant, st Stats, r Release) (dpkit.Budget, error) {
	if rc, ok := acc.(releaseCharger); ok {
		return rc.ChargeRelease(st, r)
	}
	return acc.Charge(st, r.Cost)
}

// StatusAfter returns the status of the budget rc was spent on right after rc's
// release was recorded — computed from the statistics of Spend's transaction, without
// reading the store (later spends are not included). For a replayed receipt, or one
// not made by Spend, it returns the current Status.
func (l *Ledger) StatusAfter(ctx context.Context, rc Receipt) (Status, error) {
	if rc.after == nil {
		return l.Status(ctx, rc.Release.Budget)
	}
	chain, err := l.chain(ctx, rc.Release.Budget)
	if err != nil {
		return Status{}, err
	}
	b := chain[len(chain)-1]
	e, d, err := b.acc.Spent(*rc.after)
	if err != nil {
		return Status{}, err
	}
	return Status{Definition: b.def, Releases: rc.after.Count, SpentEpsilon: e, SpentDelta: d}, nil
}

// Status is a budget's definition and what its releases have used.
type Status struct {
	Definition
	// Releases is the number of releases charged to the budget (for a top-level
	// budget, including those spent on its analyst sub-budgets).
	Releases int64 `json:"releases"`
	// SpentEpsilon and SpentDelta: for fixed and plan budgets, the exact optimal
	// composition of the slots used so far (ε at the total δ, δ at the total ε; never
	// below the optimum). For adaptive/basic, the exact Σε and Σδ rounded up. For
	// adaptive/advanced, the filter's level sqrt(2 ln(1/δ') Σε²) + Σε²/2 (rounded up)
	// and δ' + Σδ: a filter guarantees its total whenever it stops, and these say how
	// much of it is used.
	SpentEpsilon float64 `json:"spent_epsilon"`
	SpentDelta   float64 `json:"spent_delta"`
	// SpentMu, for the Gaussian policies (fixed Gaussian and the Gaussian filter), is
	// the μ of the releases' composition, rounded up: they are jointly SpentMu-GDP, and
	// SpentEpsilon, SpentDelta are two points of that curve.
	SpentMu *float64 `json:"spent_mu,omitempty"`
}

// Status returns budget id's status.
func (l *Ledger) Status(ctx context.Context, id string) (Status, error) {
	chain, err := l.chain(ctx, id)
	if err != nil {
		return Status{}, err
	}
	b := chain[len(chain)-1]
	st, err := l.store.Stats(ctx, id)
	if err != nil {
		return Status{}, err
	}
	e, d, err := b.acc.Spent(st)
	if err != nil {
		return Status{}, err
	}
	out := Status{Definition: b.def, Releases: st.Count, SpentEpsilon: e, SpentDelta: d}
	if g, ok := b.acc.(interface{ SpentMu(Stats) float64 }); ok {
		mu := g.SpentMu(st)
		out.SpentMu = &mu
	}
	return out, nil
}

// Budgets returns the definitions of all budgets, ordered by ID.
func (l *Ledger) Budgets(ctx context.Context) ([]Definition, error) {
	return l.store.Definitions(ctx)
}

// Remaining says how many more releases of cost c fit budget id under its policy (and
// its parent's, for a sub-budget), and the largest ε one more release with δ = c.Delta
// may have. It is a snapshot: concurrent spends may use the budget meanwhile.
func (l *Ledger) Remaining(ctx context.Context, id string, c dpkit.Budget) (Remaining, error) {
	if err := checkCost("cost", c); err != nil {
		return Remaining{}, err
	}
	chain, err := l.chain(ctx, id)
	if err != nil {
		return Remaining{}, err
	}
	out := Remaining{Cost: c, Releases: compose.MaxCount, NextAllowed: true, NextEpsilon: -1}
	for _, b := range chain {
		st, err := l.store.Stats(ctx, b.def.ID)
		if err != nil {
			return Remaining{}, err
		}
		r := b.acc.Remaining(st, c)
		out.Releases = min(out.Releases, r.Releases)
		out.NextAllowed = out.NextAllowed && r.NextAllowed
		if out.NextEpsilon < 0 || r.NextEpsilon < out.NextEpsilon {
			out.NextEpsilon = r.NextEpsilon
		}
	}
	if !out.NextAllowed {
		out.NextEpsilon = 0
	}
	return out, nil
}

// History returns the releases spent on budget id (and its sub-budgets) with
// Seq > after, in order; at most limit (≤ 0: all).
func (l *Ledger) History(ctx context.Context, id string, after int64, limit int) ([]Release, error) {
	return l.Releases(ctx, id, ReleaseFilter{After: after, Limit: limit})
}

// Releases returns the releases spent on budget id (and its sub-budgets) that f
// selects, in order.
func (l *Ledger) Releases(ctx context.Context, id string, f ReleaseFilter) ([]Release, error) {
	if _, err := l.chain(ctx, id); err != nil {
		return nil, err
	}
	return l.store.Releases(ctx, id, f)
}

// AuditReport is the result of replaying a budget's release log.
type AuditReport struct {
	Budget       string  `json:"budget"`
	Releases     int64   `json:"releases"`
	SpentEpsilon float64 `json:"spent_epsilon"`
	SpentDelta   float64 `json:"spent_delta"`
	// SpentMu, for the Gaussian policies (fixed Gaussian and the Gaussian filter), is
	// the μ of the releases' composition, rounded up: they are jointly SpentMu-GDP, and
	// SpentEpsilon, SpentDelta are two points of that curve.
	SpentMu *float64 `json:"spent_mu,omitempty"`
}

// Audit recomputes budget id's statistics from its release log — replaying every
// release through the policy from an empty budget, which must accept each one — and
// checks that they equal the recorded statistics exactly. For fixed and plan budgets it
// also recomposes the used slots independently (compose.Delta at the total ε must not
// exceed the total δ). Any disagreement is an error matching ErrAudit.
func (l *Ledger) Audit(ctx context.Context, id string) (AuditReport, error) {
	chain, err := l.chain(ctx, id)
	if err != nil {
		return AuditReport{}, err
	}
	b := chain[len(chain)-1]
	recorded, err := l.store.Stats(ctx, id)
	if err != nil {
		return AuditReport{}, err
	}
	rels, err := l.store.Releases(ctx, id, ReleaseFilter{})
	if err != nil {
		return AuditReport{}, err
	}
	if int64(len(rels)) < recorded.Count {
		return AuditReport{}, fmt.Errorf("%w: budget %q records %d releases but its log holds %d", ErrAudit, id, recorded.Count, len(rels))
	}
	rels = rels[:recorded.Count] // later ones were committed after the statistics were read
	st := ZeroStats()
	charged := make([]dpkit.Budget, 0, len(rels))
	for _, r := range rels {
		c, err := charge(b.acc, st, r)
		if err != nil {
			return AuditReport{}, fmt.Errorf("%w: budget %q: release seq %d would be refused on replay: %v", ErrAudit, id, r.Seq, err)
		}
		st = st.Add(c)
		charged = append(charged, c)
	}
	if !st.Equal(recorded) {
		return AuditReport{}, fmt.Errorf("%w: budget %q: recorded statistics %+v differ from the replayed %+v", ErrAudit, id, recorded.Encode(), st.Encode())
	}
	if pol := b.def.Policy; pol.Kind == Plan && pol.PlanMechanisms != nil && len(charged) > 0 {
		// Recompose the used slots by their mechanisms' privacy loss distributions.
		e, err := pldPlanEpsilon(charged, pol.PlanMechanisms[:len(charged)], b.def.Total.Delta)
		if err != nil {
			return AuditReport{}, err
		}
		if e > b.def.Total.Epsilon {
			return AuditReport{}, fmt.Errorf("%w: budget %q: the used slots compose (by their PLDs) to ε=%g > %g at δ=%g", ErrAudit, id, e, b.def.Total.Epsilon, b.def.Total.Delta)
		}
	} else if b.def.Policy.Kind != Adaptive && b.def.Policy.Mechanism == "" && len(charged) > 0 {
		r, err := compose.Delta(slotMechs(charged), b.def.Total.Epsilon, nil)
		if err != nil {
			return AuditReport{}, err
		}
		if r.Delta > b.def.Total.Delta {
			return AuditReport{}, fmt.Errorf("%w: budget %q: the used slots compose to δ=%g > %g at ε=%g", ErrAudit, id, r.Delta, b.def.Total.Delta, b.def.Total.Epsilon)
		}
	}
	e, d, err := b.acc.Spent(st)
	if err != nil {
		return AuditReport{}, err
	}
	return AuditReport{Budget: id, Releases: st.Count, SpentEpsilon: e, SpentDelta: d}, nil
}

// checkID validates a budget ID.
func checkID(name, id string) error {
	want := fmt.Sprintf("1 to %d characters from A-Z a-z 0-9 . _ : @ -", MaxIDLen)
	if len(id) < 1 || len(id) > MaxIDLen {
		return &dpkit.ParamError{Pkg: "ledger", Name: name, Value: id, Want: want}
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._:@-", r)) {
			return &dpkit.ParamError{Pkg: "ledger", Name: name, Value: id, Want: want}
		}
	}
	return nil
}

// checkMechanism validates a release's descriptor: none, a note (kind text, checked as
// free text), or a mechanism that FromDescriptor builds; its JSON form at most
// MaxMechanismLen bytes.
func checkMechanism(d mechanism.Descriptor) error {
	if d.IsZero() {
		return nil
	}
	b, err := d.MarshalJSON()
	if err != nil {
		return dpkit.InPackage("ledger", err)
	}
	if len(b) > MaxMechanismLen {
		return &dpkit.ParamError{Pkg: "ledger", Name: "mechanism", Value: fmt.Sprintf("%d bytes", len(b)), Want: fmt.Sprintf("a descriptor of at most %d bytes", MaxMechanismLen)}
	}
	if t, ok := d.Params.(mechanism.Text); ok {
		return checkText("mechanism.text", t.Text, MaxMechanismLen)
	}
	if _, err := mechanism.FromDescriptor(d); err != nil {
		return dpkit.InPackage("ledger", err)
	}
	return nil
}

// checkText validates a free-text field: valid UTF-8, no control characters, at most
// max bytes.
func checkText(name, s string, max int) error {
	if len(s) > max || !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return &dpkit.ParamError{Pkg: "ledger", Name: name, Value: s, Want: fmt.Sprintf("at most %d bytes of UTF-8 text without control characters", max)}
	}
	return nil
}

func checkRequest(req Request) error {
	if err := checkID("budget", req.Budget); err != nil {
		return err
	}
	if err := checkCost("cost", req.Cost); err != nil {
		return err
	}
	if err := checkMechanism(req.Mechanism); err != nil {
		return err
	}
	if err := checkText("analyst", req.Analyst, MaxAnalystLen); err != nil {
		return err
	}
	if len(req.Payload) > MaxPayloadLen {
		return &dpkit.ParamError{Pkg: "ledger", Name: "payload", Value: len(req.Payload), Want: fmt.Sprintf("at most %d bytes", MaxPayloadLen)}
	}
	return checkText("key", req.Key, MaxKeyLen)
}
