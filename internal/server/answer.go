package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/registry"
	"github.com/dpkit/dpkit/noise"
	"github.com/dpkit/dpkit/query"
)

// A query's way through the service (Query) and the log of what was released
// (Releases).

// maxIdempotencyKey bounds the length of an idempotency key.
const maxIdempotencyKey = 128

func checkIdempotencyKey(k string) error {
	if len(k) > maxIdempotencyKey {
		return &dpkit.ParamError{Pkg: "server", Name: "idempotency_key", Value: k[:16] + "…", Want: fmt.Sprintf("at most %d bytes", maxIdempotencyKey)}
	}
	for _, c := range k {
		if !unicode.IsPrint(c) {
			return &dpkit.ParamError{Pkg: "server", Name: "idempotency_key", Value: k, Want: "printable characters"}
		}
	}
	return nil
}

func randomKey() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "auto-" + hex.EncodeToString(b)
}

// storedAnswer is the payload the service records with each release in the ledger: the
// query text and the answer that left (or may leave) the service.
type storedAnswer struct {
	SQL    string          `json:"sql"`
	Answer json.RawMessage `json:"answer"`
}

// Per-query work limits, checked before the data are touched.
const (
	// MaxSQLBytes bounds the text of a query.
	MaxSQLBytes = 4096
	// MaxConditions bounds the comparisons of a WHERE clause: each costs a pass over the
	// table's rows (5000 of them cost seconds on 10^5 rows).
	MaxConditions = 64
	// DefaultQueryTimeout is the default per-query time limit (Options.QueryTimeout).
	DefaultQueryTimeout = 10 * time.Second
)

// pendingQuery is a checked query on its way to the ledger.
type pendingQuery struct {
	req        QueryRequest
	dataset    string
	budget     string       // the ledger budget spent on: the dataset's, or the analyst's grant
	analyst    string       // the caller's key id
	key        string       // the idempotency key as given, or generated
	releaseKey string       // the key as recorded in the ledger: per API key
	policy     PolicySpec   // the dataset's
	costs      Costs        // what the policy sets
	cost       dpkit.Budget // what the ledger charges (for a Gaussian release under the gaussian filter: its (ε, δ) at the total δ, shown; μ is charged)
	opts       query.ReleaseOptions
	chosen     bool // the query chose its cost (adaptive policy)
	prepared   Prepared
	limit      time.Duration // the query's time limit
	deadline   time.Time     // when the query's time is up
}

// Query answers req on dataset d for caller p. The order of steps is what makes it safe
// (docs/design.md, key idea 4):
//
//  1. check the request: its cost under the dataset's policy, its idempotency key and
//     the per-query work limits (bad input costs nothing and touches no data);
//  2. without charging anything, look the idempotency key up in the ledger — a recorded
//     release is answered with its recorded answer, a key used for another query is
//     refused (409) — and check that the budget would accept the release (else 409):
//     a request that cannot be charged is refused before the data are touched (not even
//     loaded), in a time that does not depend on them (the grant was checked when d was
//     looked up);
//  3. plan the query against the table (bad SQL: 400 with its position, nothing
//     charged) and compute the noisy answer, within the per-query time limit;
//  4. record the release together with its answer in the ledger, in the transaction
//     that checks the budget again;
//  5. only then return the answer.
//
// The ledger decides at step 4: a concurrent query may have taken the last of the
// budget since step 2. Such a refusal comes after the data were touched, so it is sent
// when the query's time limit is up, not when the computation ended: its timing does not
// depend on the data either. A retry with the same idempotency key (per API key) is not
// charged again and returns the answer given first. An answer whose release was refused
// or cut off by a crash never leaves.
func (s *Server) Query(ctx context.Context, p principal, d *dataset, req QueryRequest) (*QueryResponse, error) {
	q, err := s.plan(ctx, p, d, req)
	if err != nil {
		return nil, err
	}
	receipt, found, err := s.admit(ctx, d, q)
	if err != nil {
		return nil, demoHint(d, err)
	}
	if !found {
		if q.prepared == nil {
			if err := s.prepare(ctx, d, q); err != nil {
				return nil, err
			}
		}
		if receipt, err = s.compute(ctx, q); err != nil {
			return nil, demoHint(d, err)
		}
	}
	ans, err := s.answerOf(ctx, q, receipt)
	if err != nil {
		return nil, err
	}
	return &QueryResponse{
		Aggregates: ans.Aggregates, GroupBy: ans.GroupBy, Result: ans.Result, Values: ans.Values, Groups: ans.Groups, Mechanism: ans.Mechanism, Scale: ans.Scale, CI95: ans.CI95, Mu: ans.Mu,
		Charged: receipt.Charged, Spent: receipt.Status.Spent, RemainingQueries: receipt.Status.Remaining,
		Release: receipt.Number, IdempotencyKey: q.key,
	}, nil
}

// admit is step 2 of Query: the release recorded with q's idempotency key, if any (found),
// else nil error if the budget would accept q now. Both are read at once, the budget in a
// goroutine of its own, so that a database across the network answers them in the time
// of one round trip; a key made by this request (none given) cannot be recorded yet. A
// query that asks for an accuracy has its cost only once it is planned: its key is looked
// up first, then it is planned (against the schema, not the rows) and its budget checked,
// before anything is computed.
func (s *Server) admit(ctx context.Context, d *dataset, q *pendingQuery) (Receipt, bool, error) {
	if q.req.Accuracy != nil {
		if q.req.IdempotencyKey != "" {
			if receipt, found, err := s.ledger.Recorded(ctx, q.budget, q.releaseKey); err != nil || found {
				return receipt, found, err
			}
		}
		if err := s.prepare(ctx, d, q); err != nil {
			return Receipt{}, false, err
		}
		if err := q.accuracyCost(); err != nil {
			return Receipt{}, false, err
		}
		return Receipt{}, false, s.ledger.Check(ctx, q.budget, q.spend(nil))
	}
	if q.req.IdempotencyKey == "" {
		return Receipt{}, false, s.ledger.Check(ctx, q.budget, q.spend(nil))
	}
	check := make(chan error, 1)
	go func() { check <- s.ledger.Check(ctx, q.budget, q.spend(nil)) }()
	receipt, found, err := s.ledger.Recorded(ctx, q.budget, q.releaseKey)
	checked := <-check
	switch {
	case err != nil:
		return Receipt{}, false, err
	case found:
		return receipt, true, nil
	}
	return Receipt{}, false, checked
}

// demoHint adds to the refusal of a query on a spent demo dataset how to start over.
func demoHint(d *dataset, err error) error {
	if d.rec.Demo && errors.Is(err, ErrBudgetExceeded) {
		return fmt.Errorf("%w. This is a demo dataset: start the demo over with a fresh budget with \"dpkit serve --demo --reset\" (or another --db)", err)
	}
	return err
}

// compute computes q's answer within its time limit and records it with its release;
// a refusal after the computation is returned at q's deadline.
func (s *Server) compute(ctx context.Context, q *pendingQuery) (Receipt, error) {
	ans, payload, err := s.release(ctx, q)
	if err != nil {
		return Receipt{}, err
	}
	receipt, err := s.ledger.Spend(ctx, q.budget, q.spend(&spendOf{ans, payload}))
	if errors.Is(err, ErrKeyConflict) {
		return Receipt{}, q.conflict()
	}
	if errors.Is(err, ErrBudgetExceeded) {
		waitUntil(ctx, q.deadline)
	}
	if err != nil {
		return Receipt{}, err
	}
	if !receipt.Replayed {
		receipt.Payload = payload
	}
	return receipt, nil
}

// waitUntil returns at t, or when ctx ends.
func waitUntil(ctx context.Context, t time.Time) {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}

// errTimeout is a query that did not finish within its time limit.
type errTimeout time.Duration

func (e errTimeout) Error() string {
	return fmt.Sprintf("the query did not finish within the per-query time limit of %v: ask for less (fewer conditions, a smaller GROUP BY domain), or retry when the service is less busy; nothing was charged", time.Duration(e))
}

// release computes the noisy answer and the payload that records it, at most until q's
// deadline. The computations in progress are bounded (Server.work): one abandoned at
// its deadline keeps its slot until it ends.
func (s *Server) release(ctx context.Context, q *pendingQuery) (Answer, []byte, error) {
	type result struct {
		ans     Answer
		payload []byte
		err     error
	}
	ctx, cancel := context.WithDeadline(ctx, q.deadline)
	defer cancel()
	select {
	case s.work <- struct{}{}:
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return Answer{}, nil, errBusy
		}
		return Answer{}, nil, ctx.Err()
	}
	done := make(chan result, 1)
	go func() {
		defer func() { <-s.work }()
		ans, payload, err := q.release(ctx, s.src)
		done <- result{ans, payload, err}
	}()
	select {
	case r := <-done:
		return r.ans, r.payload, r.err
	case <-ctx.Done():
		return Answer{}, nil, q.timeoutErr(ctx)
	}
}

// errBusy: the query's time ran out while it waited for its turn to be computed.
var errBusy = errorf(http.StatusServiceUnavailable, "the service is busy computing other queries: retry later (nothing was charged)")

// timeoutErr is the error of a computation whose context ended: the time limit, or the
// client's cancellation.
func (q *pendingQuery) timeoutErr(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return errTimeout(q.limit)
	}
	return ctx.Err()
}

// plan checks req against d's policy and the work limits and returns the query with its
// cost, without touching the data.
func (s *Server) plan(ctx context.Context, p principal, d *dataset, req QueryRequest) (*pendingQuery, error) {
	if strings.TrimSpace(req.SQL) == "" {
		return nil, &dpkit.ParamError{Pkg: "server", Name: "sql", Value: req.SQL, Want: "a query such as SELECT COUNT(*) FROM " + d.spec.Name}
	}
	if err := checkWork(req.SQL); err != nil {
		return nil, err
	}
	if err := checkIdempotencyKey(req.IdempotencyKey); err != nil {
		return nil, err
	}
	q := &pendingQuery{req: req, dataset: d.spec.Name, analyst: p.ID, key: req.IdempotencyKey, policy: *d.spec.Policy,
		chosen: d.spec.Policy.Mode == "adaptive", limit: s.queryLimit(d)}
	q.deadline = time.Now().Add(q.limit)
	var err error
	if q.budget, err = s.ledger.AnalystBudget(ctx, d.spec.Name, p.ID); err != nil {
		return nil, err
	}
	if q.costs, err = s.ledger.Costs(ctx, d.spec.Name); err != nil {
		return nil, err
	}
	if err := q.chooseCost(); err != nil {
		return nil, err
	}
	if q.key == "" {
		q.key = randomKey()
	}
	q.releaseKey = p.ID + "/" + q.key
	return q, nil
}

// prepare plans q against d's table, loading the table on first use.
func (s *Server) prepare(ctx context.Context, d *dataset, q *pendingQuery) error {
	table, err := s.table(ctx, d)
	if err != nil {
		return err
	}
	q.prepared, err = table.Prepare(d.spec.Name, q.req.SQL)
	return err
}

// checkWork refuses a query text over the per-query work limits (MaxSQLBytes,
// MaxConditions). Syntax errors are left to Prepare, which reports their position.
func checkWork(sql string) error {
	if len(sql) > MaxSQLBytes {
		return &dpkit.ParamError{Pkg: "server", Name: "sql", Value: fmt.Sprintf("%d bytes", len(sql)), Want: fmt.Sprintf("a query of at most %d bytes", MaxSQLBytes)}
	}
	q, err := query.Parse(sql)
	if err != nil {
		return nil
	}
	if n := conditions(q.Where); n > MaxConditions {
		return &dpkit.ParamError{Pkg: "server", Name: "sql", Value: fmt.Sprintf("a WHERE clause of %d comparisons", n), Want: fmt.Sprintf("at most %d comparisons (each is a pass over the table)", MaxConditions)}
	}
	return nil
}

// conditions counts the comparisons of a WHERE clause.
func conditions(e query.Expr) int {
	switch e := e.(type) {
	case *query.Comparison:
		return 1
	case *query.Logic:
		n := 0
		for _, t := range e.Terms {
			n += conditions(t)
		}
		return n
	}
	return 0
}

// spendOf is a computed answer with the payload that records it.
type spendOf struct {
	ans     Answer
	payload []byte
}

// spend is the ledger request of q: for the check before computing (a == nil, with the
// mechanism a Gaussian release will run, whose μ the ledger needs), or for recording
// the computed answer.
func (q *pendingQuery) spend(a *spendOf) Spend {
	cost := q.cost
	sp := Spend{Key: q.releaseKey, Analyst: q.analyst, Cost: &cost}
	if a != nil {
		sp.Mechanism, sp.Payload = a.ans.Descriptor, a.payload
	} else if q.opts.Gaussian {
		sp.Mechanism = gaussianCheck(q.opts.Mu)
	}
	return sp
}

// release computes the noisy answer and the payload that records it.
func (q *pendingQuery) release(ctx context.Context, src noise.Source) (Answer, []byte, error) {
	ans, err := q.prepared.Release(ctx, q.opts, src)
	if err != nil {
		return Answer{}, nil, q.explain(err)
	}
	if q.chosen {
		ans.Epsilon, ans.Delta = q.req.Epsilon, q.req.Delta
		if ans.Epsilon != nil && ans.Delta == nil {
			zero := 0.0
			ans.Delta = &zero
		}
		ans.RequestMu, ans.RequestGaussian = q.req.Mu, q.req.Mechanism == "gaussian"
	}
	if q.req.Accuracy != nil {
		h := q.req.Accuracy.CI95HalfWidth
		ans.RequestAccuracy = &h
	}
	body, err := json.Marshal(ans)
	if err != nil {
		return Answer{}, nil, err
	}
	payload, err := json.Marshal(storedAnswer{SQL: q.req.SQL, Answer: body})
	return ans, payload, err
}

func (q *pendingQuery) conflict() error {
	return fmt.Errorf("idempotency key %q was used for another query: %w", q.key, ErrKeyConflict)
}

// answerOf returns the answer recorded with receipt's release — for a replay, after
// checking that it answered the same query at the same cost.
func (s *Server) answerOf(ctx context.Context, q *pendingQuery, receipt Receipt) (Answer, error) {
	sqlText, recorded, err := s.recordedAnswer(ctx, q.dataset, q.releaseKey, receipt.Payload)
	if err != nil {
		return Answer{}, err
	}
	var ans Answer
	if err := json.Unmarshal(recorded, &ans); err != nil {
		return Answer{}, fmt.Errorf("release %d: stored answer: %w", receipt.Number, err)
	}
	if receipt.Replayed && (sqlText != q.req.SQL || !sameCost(ans, q.req)) {
		return Answer{}, q.conflict()
	}
	return ans, nil
}

// recordedAnswer returns the query text and answer of a recorded release: from its
// ledger payload, or, for a release recorded by an earlier dpkit (before answers moved
// into the ledger), from the registry's server_answers table.
func (s *Server) recordedAnswer(ctx context.Context, dataset, releaseKey string, payload []byte) (string, json.RawMessage, error) {
	if len(payload) > 0 {
		var sa storedAnswer
		if err := json.Unmarshal(payload, &sa); err != nil {
			return "", nil, fmt.Errorf("release %q of dataset %q: malformed payload: %w", releaseKey, dataset, err)
		}
		return sa.SQL, sa.Answer, nil
	}
	rec, err := s.reg.Answer(ctx, dataset, releaseKey)
	if err != nil {
		return "", nil, fmt.Errorf("release %q of dataset %q: no recorded answer: %w", releaseKey, dataset, err)
	}
	return rec.SQL, rec.Response, nil
}

// sameCost reports whether a stored answer was made for the cost req asks for.
func sameCost(a Answer, req QueryRequest) bool {
	eq := func(x, y *float64) bool { return x == nil && y == nil || x != nil && y != nil && *x == *y }
	d := req.Delta
	if req.Epsilon != nil && d == nil {
		zero := 0.0
		d = &zero
	}
	var acc *float64
	if req.Accuracy != nil {
		acc = &req.Accuracy.CI95HalfWidth
	}
	return eq(a.Epsilon, req.Epsilon) && eq(a.Delta, d) && eq(a.RequestMu, req.Mu) && eq(a.RequestAccuracy, acc) &&
		a.RequestGaussian == (req.Mechanism == "gaussian")
}

// MaxPage is the largest page of the audit log (GET …/releases?limit=).
const MaxPage = 1000

// Releases returns the page of dataset d's audit log that page selects, oldest first,
// each release with its query, the answer that was returned and the name of the key
// that asked, and the cursor of the next page (0 when this is the last).
func (s *Server) Releases(ctx context.Context, d *dataset, page Page) ([]ReleaseInfo, int64, error) {
	limit := page.Limit
	page.Limit++ // one more, to know whether there is a next page
	rels, err := s.ledger.Releases(ctx, d.spec.Name, page)
	if err != nil {
		return nil, 0, err
	}
	var next int64
	if len(rels) > limit {
		rels = rels[:limit]
		next = rels[limit-1].Number
	}
	legacy, err := s.legacyAnswers(ctx, d, rels)
	if err != nil {
		return nil, 0, err
	}
	keys, err := s.reg.Keys(ctx)
	if err != nil {
		return nil, 0, err
	}
	names := make(map[string]string, len(keys))
	for _, k := range keys {
		names[k.ID] = k.Name
	}
	out := make([]ReleaseInfo, 0, len(rels))
	for _, rel := range rels {
		ri := ReleaseInfo{Release: rel.Number, Time: rel.Time.UTC().Format(time.RFC3339Nano), KeyID: rel.Analyst, Analyst: names[rel.Analyst], Charged: rel.Charged, Mechanism: rel.Mechanism.String()}
		if ri.Analyst == "" {
			ri.Analyst = rel.Analyst
		}
		var sa storedAnswer
		if len(rel.Payload) > 0 && json.Unmarshal(rel.Payload, &sa) == nil {
			ri.SQL, ri.Answer = sa.SQL, sa.Answer
		} else if a, ok := legacy[rel.Key]; ok {
			ri.SQL, ri.Answer = a.SQL, json.RawMessage(a.Response)
		}
		out = append(out, ri)
	}
	return out, next, nil
}

// legacyAnswers returns, by release key, the answers an earlier dpkit recorded in the
// registry for those of rels that have no payload (none if all have one).
func (s *Server) legacyAnswers(ctx context.Context, d *dataset, rels []Release) (map[string]registry.AnswerRecord, error) {
	for _, rel := range rels {
		if len(rel.Payload) == 0 {
			answers, err := s.reg.Answers(ctx, d.spec.Name)
			if err != nil {
				return nil, err
			}
			byKey := make(map[string]registry.AnswerRecord, len(answers))
			for _, a := range answers {
				byKey[a.ReleaseKey] = a
			}
			return byKey, nil
		}
	}
	return nil, nil
}
