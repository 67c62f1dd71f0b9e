package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/registry"
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

// pendingQuery is a checked query on its way to the ledger.
type pendingQuery struct {
	req        QueryRequest
	dataset    string
	analyst    string       // the caller's key id
	key        string       // the idempotency key as given, or generated
	releaseKey string       // the key as recorded in the ledger: per API key
	cost       dpkit.Budget // what the release costs
	chosen     bool         // the query chose its cost (adaptive policy)
	prepared   Prepared
}

// Query answers req on dataset d for caller p. The order of steps is what makes it safe:
//
//  1. check the request and plan the query (bad input and bad SQL cost nothing);
//  2. compute the noisy answer;
//  3. record the release together with its answer in the ledger, in the transaction
//     that checks the budget — or the ledger refuses it (409) and nothing leaves;
//  4. only then return the answer.
//
// A retry with the same idempotency key (per API key) is not charged again: the ledger
// returns the release recorded first with its answer, and that answer is returned (the
// answer computed for the retry never leaves). The same key with another query or cost
// is 409. An answer whose release was refused or cut off by a crash never leaves.
func (s *Server) Query(ctx context.Context, p principal, d *dataset, req QueryRequest) (*QueryResponse, error) {
	q, err := s.plan(ctx, p, d, req)
	if err != nil {
		return nil, err
	}
	ans, payload, err := q.release(s)
	if err != nil {
		return nil, err
	}
	receipt, err := s.charge(ctx, q, ans, payload)
	if err != nil {
		return nil, err
	}
	if receipt.Replayed {
		// The answer recorded with the release, not the one just computed.
		if ans, err = s.replayed(ctx, q, receipt); err != nil {
			return nil, err
		}
	}
	return &QueryResponse{
		Result: ans.Result, Groups: ans.Groups, Mechanism: ans.Mechanism, Scale: ans.Scale, CI95: ans.CI95,
		Charged: receipt.Charged, Spent: receipt.Status.Spent, RemainingQueries: receipt.Status.Remaining,
		Release: receipt.Seq, IdempotencyKey: q.key,
	}, nil
}

// plan checks req against d's policy and schema and returns the query with its cost.
func (s *Server) plan(ctx context.Context, p principal, d *dataset, req QueryRequest) (*pendingQuery, error) {
	if strings.TrimSpace(req.SQL) == "" {
		return nil, &dpkit.ParamError{Pkg: "server", Name: "sql", Value: req.SQL, Want: "a query such as SELECT COUNT(*) FROM " + d.spec.Name}
	}
	if err := checkIdempotencyKey(req.IdempotencyKey); err != nil {
		return nil, err
	}
	q := &pendingQuery{req: req, dataset: d.spec.Name, analyst: p.ID, key: req.IdempotencyKey, chosen: d.spec.Policy.Mode == "adaptive"}
	if err := q.chosenCost(); err != nil {
		return nil, err
	}
	table, err := s.table(ctx, d)
	if err != nil {
		return nil, err
	}
	if q.prepared, err = table.Prepare(d.spec.Name, req.SQL); err != nil {
		return nil, err
	}
	if !q.chosen {
		per, err := s.ledger.PerQuery(ctx, d.spec.Name)
		if err != nil {
			return nil, err
		}
		if per == nil {
			return nil, fmt.Errorf("dataset %q: fixed policy without a per-query cost", d.spec.Name)
		}
		q.cost = *per
	}
	if q.key == "" {
		q.key = randomKey()
	}
	q.releaseKey = p.ID + "/" + q.key
	return q, nil
}

// chosenCost sets the cost the request names, which the adaptive policy requires and
// the fixed one forbids.
func (q *pendingQuery) chosenCost() error {
	req := q.req
	if !q.chosen {
		if req.Epsilon != nil || req.Delta != nil {
			return &dpkit.ParamError{Pkg: "server", Name: "epsilon", Value: "set", Want: "absent: the dataset's fixed policy sets the cost of every query"}
		}
		return nil
	}
	if req.Epsilon == nil {
		return &dpkit.ParamError{Pkg: "server", Name: "epsilon", Value: nil, Want: "the ε of this query (the dataset's policy is adaptive)"}
	}
	q.cost = dpkit.Budget{Epsilon: *req.Epsilon}
	if req.Delta != nil {
		q.cost.Delta = *req.Delta
	}
	if err := dpkit.CheckPositive("epsilon", q.cost.Epsilon); err != nil {
		return dpkit.InPackage("server", err)
	}
	return dpkit.InPackage("server", dpkit.CheckDelta("delta", q.cost.Delta))
}

// release computes the noisy answer and the payload that records it.
func (q *pendingQuery) release(s *Server) (Answer, []byte, error) {
	ans, err := q.prepared.Release(q.cost, s.src)
	if err != nil {
		return Answer{}, nil, err
	}
	if q.chosen {
		ans.Epsilon, ans.Delta = &q.cost.Epsilon, &q.cost.Delta
	}
	body, err := json.Marshal(ans)
	if err != nil {
		return Answer{}, nil, err
	}
	payload, err := json.Marshal(storedAnswer{SQL: q.req.SQL, Answer: body})
	return ans, payload, err
}

// charge records the release with its payload in the ledger, which checks the budget in
// the same transaction.
func (s *Server) charge(ctx context.Context, q *pendingQuery, ans Answer, payload []byte) (Receipt, error) {
	spend := Spend{Key: q.releaseKey, Analyst: q.analyst, Mechanism: ans.Descriptor, Payload: payload}
	if q.chosen {
		spend.Cost = &q.cost
	}
	receipt, err := s.ledger.Spend(ctx, q.dataset, spend)
	if errors.Is(err, ErrKeyConflict) {
		return Receipt{}, q.conflict()
	}
	return receipt, err
}

func (q *pendingQuery) conflict() error {
	return fmt.Errorf("idempotency key %q was used for another query: %w", q.key, ErrKeyConflict)
}

// replayed returns the answer recorded with a replayed release, after checking that it
// answered the same query at the same cost.
func (s *Server) replayed(ctx context.Context, q *pendingQuery, receipt Receipt) (Answer, error) {
	sqlText, recorded, err := s.recordedAnswer(ctx, q.dataset, q.releaseKey, receipt.Payload)
	if err != nil {
		return Answer{}, err
	}
	var ans Answer
	if err := json.Unmarshal(recorded, &ans); err != nil {
		return Answer{}, fmt.Errorf("release %d: stored answer: %w", receipt.Seq, err)
	}
	if sqlText != q.req.SQL || !sameCost(ans, q.req) {
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
	return eq(a.Epsilon, req.Epsilon) && eq(a.Delta, d)
}

// Releases returns the audit log of dataset d, oldest first, with each release's query
// and the answer that was returned, and the name of the key that asked.
func (s *Server) Releases(ctx context.Context, d *dataset) ([]ReleaseInfo, error) {
	rels, err := s.ledger.Releases(ctx, d.spec.Name)
	if err != nil {
		return nil, err
	}
	// Releases recorded by an earlier dpkit have their answer in server_answers.
	var byKey map[string]registry.AnswerRecord
	for _, rel := range rels {
		if len(rel.Payload) == 0 {
			answers, err := s.reg.Answers(ctx, d.spec.Name)
			if err != nil {
				return nil, err
			}
			byKey = make(map[string]registry.AnswerRecord, len(answers))
			for _, a := range answers {
				byKey[a.ReleaseKey] = a
			}
			break
		}
	}
	keys, err := s.reg.Keys(ctx)
	if err != nil {
		return nil, err
	}
	names := make(map[string]string, len(keys))
	for _, k := range keys {
		names[k.ID] = k.Name
	}
	out := make([]ReleaseInfo, 0, len(rels))
	for _, rel := range rels {
		ri := ReleaseInfo{Seq: rel.Seq, Time: rel.Time.UTC().Format(time.RFC3339Nano), Analyst: names[rel.Analyst], Charged: rel.Charged, Mechanism: rel.Mechanism.String()}
		if ri.Analyst == "" {
			ri.Analyst = rel.Analyst
		}
		var sa storedAnswer
		if len(rel.Payload) > 0 && json.Unmarshal(rel.Payload, &sa) == nil {
			ri.SQL, ri.Answer = sa.SQL, sa.Answer
		} else if a, ok := byKey[rel.Key]; ok {
			ri.SQL, ri.Answer = a.SQL, json.RawMessage(a.Response)
		}
		out = append(out, ri)
	}
	return out, nil
}
