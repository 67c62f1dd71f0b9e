package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
)

// Handlers stay thin: authenticate, decode, call the store / ledger / query layer,
// encode. Every error goes through writeError (one JSON shape).

// authAdmin authenticates r and requires an admin key (403 otherwise).
func (s *Server) authAdmin(r *http.Request) (principal, error) {
	p, err := s.authenticate(r)
	if err == nil && !p.admin() {
		err = errAdminOnly
	}
	return p, err
}

// adminBody authenticates r as an admin's request and decodes its JSON body into v.
func (s *Server) adminBody(w http.ResponseWriter, r *http.Request, v any) error {
	if _, err := s.authAdmin(r); err != nil {
		return err
	}
	return s.decode(w, r, v)
}

// authDataset authenticates r and returns the dataset named by the path's {name} as the
// caller may see it (see lookup).
func (s *Server) authDataset(r *http.Request) (principal, *dataset, error) {
	p, err := s.authenticate(r)
	if err != nil {
		return p, nil, err
	}
	d, err := s.lookup(r.Context(), p, r.PathValue("name"))
	return p, d, err
}

func (s *Server) listDatasets(w http.ResponseWriter, r *http.Request) error {
	p, err := s.authenticate(r)
	if err != nil {
		return err
	}
	if err := s.loadDatasets(r.Context()); err != nil {
		return err
	}
	var granted map[string]bool
	if !p.admin() {
		if granted, err = s.store.Grants(r.Context(), p.ID); err != nil {
			return err
		}
	}
	s.mu.Lock()
	out := []DatasetInfo{}
	for _, name := range sortedKeys(s.data) {
		d := s.data[name]
		if p.admin() || granted[name] {
			out = append(out, d.spec.info(d.rec, p.admin()))
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"datasets": out})
	return nil
}

func (s *Server) getDataset(w http.ResponseWriter, r *http.Request) error {
	p, d, err := s.authDataset(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, d.spec.info(d.rec, p.admin()))
	return nil
}

func (s *Server) createDataset(w http.ResponseWriter, r *http.Request) error {
	var req CreateDatasetRequest
	if err := s.adminBody(w, r, &req); err != nil {
		return err
	}
	info, err := s.Register(r.Context(), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, info)
	return nil
}

// Register validates and registers a dataset: it loads the data (so that malformed CSV is
// reported now; a PostgreSQL table is read into a snapshot, see snapshotTable), creates the dataset's budget in the ledger, and records the dataset.
// A dataset name is never reused: registering an existing name fails with ErrExists, so
// a budget can never be reset by registering its dataset again.
func (s *Server) Register(ctx context.Context, req CreateDatasetRequest) (DatasetInfo, error) {
	spec := req.DatasetSpec
	schema, err := spec.validate()
	if err != nil {
		return DatasetInfo{}, err
	}
	rec := DatasetRecord{Name: spec.Name, CSV: req.CSV, Path: req.Path, Created: time.Now().UTC()}
	var table Table
	switch {
	case countSet(req.CSV != "", req.Path != "", req.Table != nil) != 1:
		return DatasetInfo{}, &dpkit.ParamError{Name: "csv", Value: "", Want: `exactly one of "csv" (CSV text), "path" (a CSV file on the server) and "table" (a PostgreSQL table)`}
	case req.Path != "":
		f, err := os.Open(req.Path)
		if err != nil {
			return DatasetInfo{}, &dpkit.ParamError{Name: "path", Value: req.Path, Want: "a readable CSV file on the server"}
		}
		table, err = s.engine.Load(schema, f)
		f.Close()
		if err != nil {
			return DatasetInfo{}, err
		}
	default:
		if req.Table != nil {
			// A snapshot, stored and loaded as CSV text like "csv" (see snapshotTable).
			if rec.CSV, rec.Origin, err = snapshotTable(ctx, *req.Table, schema); err != nil {
				return DatasetInfo{}, err
			}
		}
		if table, err = s.engine.Load(schema, strings.NewReader(rec.CSV)); err != nil {
			return DatasetInfo{}, err
		}
	}
	if rec.Spec, err = json.Marshal(spec); err != nil {
		return DatasetInfo{}, err
	}

	s.created.Lock()
	defer s.created.Unlock()
	if _, err := s.dataset(ctx, spec.Name); err == nil {
		return DatasetInfo{}, fmt.Errorf("dataset %q: %w", spec.Name, ErrExists)
	}
	if err := s.ledger.Create(ctx, spec.Name, *spec.Budget, *spec.Policy); err != nil {
		if !errors.Is(err, ErrExists) {
			return DatasetInfo{}, err
		}
		// A budget without a dataset: a registration interrupted between the two steps
		// (or a name taken by another process in between). Adopt it only if it is the
		// same budget and nothing was spent from it.
		st, serr := s.ledger.Status(ctx, spec.Name)
		if serr != nil || st.Releases != 0 || st.Total != *spec.Budget || st.Policy.Mode != spec.Policy.Mode || st.Policy.MaxQueries != spec.Policy.MaxQueries {
			return DatasetInfo{}, fmt.Errorf("dataset %q: a ledger budget of that name exists: %w", spec.Name, ErrExists)
		}
	}
	if err := s.store.AddDataset(ctx, rec); err != nil {
		return DatasetInfo{}, err
	}
	rec.CSV = "" // loaded already; the store keeps it
	d := &dataset{spec: spec, rec: rec, schema: schema, table: table}
	s.mu.Lock()
	s.data[spec.Name] = d
	s.mu.Unlock()
	return spec.info(rec, true), nil
}

// countSet returns how many of its arguments are true.
func countSet(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// maxIdempotencyKey bounds the length of an idempotency key.
const maxIdempotencyKey = 128

func checkIdempotencyKey(k string) error {
	if len(k) > maxIdempotencyKey {
		return &dpkit.ParamError{Name: "idempotency_key", Value: k[:16] + "…", Want: fmt.Sprintf("at most %d bytes", maxIdempotencyKey)}
	}
	for _, c := range k {
		if !unicode.IsPrint(c) {
			return &dpkit.ParamError{Name: "idempotency_key", Value: k, Want: "printable characters"}
		}
	}
	return nil
}

func randomKey() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "auto-" + hex.EncodeToString(b)
}

func (s *Server) query(w http.ResponseWriter, r *http.Request) error {
	p, d, err := s.authDataset(r)
	if err != nil {
		return err
	}
	var req QueryRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	resp, err := s.Query(r.Context(), p, d, req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// storedAnswer is the payload the service records with each release in the ledger: the
// query text and the answer that left (or may leave) the service.
type storedAnswer struct {
	SQL    string          `json:"sql"`
	Answer json.RawMessage `json:"answer"`
}

// Query answers req on dataset d for caller p. The order of steps is what makes it safe:
//
//  1. parse and check the SQL (bad SQL costs nothing);
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
	if strings.TrimSpace(req.SQL) == "" {
		return nil, &dpkit.ParamError{Name: "sql", Value: req.SQL, Want: "a query such as SELECT COUNT(*) FROM " + d.spec.Name}
	}
	if err := checkIdempotencyKey(req.IdempotencyKey); err != nil {
		return nil, err
	}
	var cost *dpkit.Budget
	switch d.spec.Policy.Mode {
	case "adaptive":
		if req.Epsilon == nil {
			return nil, &dpkit.ParamError{Name: "epsilon", Value: nil, Want: "the ε of this query (the dataset's policy is adaptive)"}
		}
		b := dpkit.Budget{Epsilon: *req.Epsilon}
		if req.Delta != nil {
			b.Delta = *req.Delta
		}
		if err := dpkit.CheckPositive("epsilon", b.Epsilon); err != nil {
			return nil, err
		}
		if err := dpkit.CheckDelta("delta", b.Delta); err != nil {
			return nil, err
		}
		cost = &b
	default:
		if req.Epsilon != nil || req.Delta != nil {
			return nil, &dpkit.ParamError{Name: "epsilon", Value: "set", Want: "absent: the dataset's fixed policy sets the cost of every query"}
		}
	}
	table, err := s.table(ctx, d)
	if err != nil {
		return nil, err
	}
	prepared, err := table.Prepare(d.spec.Name, req.SQL)
	if err != nil {
		return nil, err
	}
	if cost == nil {
		per, err := s.ledger.PerQuery(ctx, d.spec.Name)
		if err != nil {
			return nil, err
		}
		if per == nil {
			return nil, fmt.Errorf("dataset %q: fixed policy without a per-query cost", d.spec.Name)
		}
		b := *per
		cost = &b
	}

	given := req.IdempotencyKey
	if given == "" {
		given = randomKey()
	}
	releaseKey := p.ID + "/" + given
	ans, err := prepared.Release(*cost, s.src)
	if err != nil {
		return nil, err
	}
	if req.Epsilon != nil {
		ans.Epsilon, ans.Delta = &cost.Epsilon, &cost.Delta
	}
	body, err := json.Marshal(ans)
	if err != nil {
		return nil, err
	}
	payload, err := json.Marshal(storedAnswer{SQL: req.SQL, Answer: body})
	if err != nil {
		return nil, err
	}
	conflict := func() error {
		return fmt.Errorf("idempotency key %q was used for another query: %w", given, ErrKeyConflict)
	}
	spend := Spend{Key: releaseKey, Analyst: p.ID, Mechanism: fmt.Sprintf("%s:scale=%g", ans.Mechanism, ans.Scale), Payload: payload}
	if d.spec.Policy.Mode == "adaptive" {
		spend.Cost = cost
	}
	receipt, err := s.ledger.Spend(ctx, d.spec.Name, spend)
	if errors.Is(err, ErrKeyConflict) {
		return nil, conflict()
	}
	if err != nil {
		return nil, err
	}
	if receipt.Replayed {
		// The answer recorded with the release, not the one just computed.
		sqlText, recorded, err := s.recordedAnswer(ctx, d.spec.Name, releaseKey, receipt.Payload)
		if err != nil {
			return nil, err
		}
		ans = Answer{}
		if err := json.Unmarshal(recorded, &ans); err != nil {
			return nil, fmt.Errorf("release %d: stored answer: %w", receipt.Seq, err)
		}
		if sqlText != req.SQL || !sameCost(ans, req) {
			return nil, conflict()
		}
	}
	return &QueryResponse{
		Result: ans.Result, Groups: ans.Groups, Mechanism: ans.Mechanism, Scale: ans.Scale, CI95: ans.CI95,
		Charged: receipt.Charged, Spent: receipt.Status.Spent, RemainingQueries: receipt.Status.Remaining,
		Release: receipt.Seq, IdempotencyKey: given,
	}, nil
}

// recordedAnswer returns the query text and answer of a recorded release: from its
// ledger payload, or, for a release recorded by an earlier dpkit (before answers moved
// into the ledger), from the server_answers table.
func (s *Server) recordedAnswer(ctx context.Context, dataset, releaseKey string, payload []byte) (string, json.RawMessage, error) {
	if len(payload) > 0 {
		var sa storedAnswer
		if err := json.Unmarshal(payload, &sa); err != nil {
			return "", nil, fmt.Errorf("release %q of dataset %q: malformed payload: %w", releaseKey, dataset, err)
		}
		return sa.SQL, sa.Answer, nil
	}
	rec, err := s.store.Answer(ctx, dataset, releaseKey)
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

// datasetStatus authenticates r and returns the budget status of the dataset named by
// the path's {name}.
func (s *Server) datasetStatus(r *http.Request) (Status, error) {
	_, d, err := s.authDataset(r)
	if err != nil {
		return Status{}, err
	}
	return s.ledger.Status(r.Context(), d.spec.Name)
}

func (s *Server) budget(w http.ResponseWriter, r *http.Request) error {
	st, err := s.datasetStatus(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, BudgetResponse{Total: st.Total, Spent: st.Spent, Releases: st.Releases, Policy: st.Policy, RemainingQueries: st.Remaining, PerQuery: st.PerQuery})
	return nil
}

func (s *Server) releases(w http.ResponseWriter, r *http.Request) error {
	_, d, err := s.authDataset(r)
	if err != nil {
		return err
	}
	rels, err := s.ledger.Releases(r.Context(), d.spec.Name)
	if err != nil {
		return err
	}
	// Releases recorded by an earlier dpkit have their answer in server_answers.
	var byKey map[string]AnswerRecord
	for _, rel := range rels {
		if len(rel.Payload) == 0 {
			answers, err := s.store.Answers(r.Context(), d.spec.Name)
			if err != nil {
				return err
			}
			byKey = make(map[string]AnswerRecord, len(answers))
			for _, a := range answers {
				byKey[a.ReleaseKey] = a
			}
			break
		}
	}
	keys, err := s.store.Keys(r.Context())
	if err != nil {
		return err
	}
	names := make(map[string]string, len(keys))
	for _, k := range keys {
		names[k.ID] = k.Name
	}
	out := make([]ReleaseInfo, 0, len(rels))
	for _, rel := range rels {
		ri := ReleaseInfo{Seq: rel.Seq, Time: rel.Time.UTC().Format(time.RFC3339Nano), Analyst: names[rel.Analyst], Charged: rel.Charged, Mechanism: rel.Mechanism}
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
	writeJSON(w, http.StatusOK, map[string]any{"releases": out})
	return nil
}

// curvePoints is the number of ε values at which the curve is evaluated.
const curvePoints = 121

func (s *Server) curve(w http.ResponseWriter, r *http.Request) error {
	st, err := s.datasetStatus(r)
	if err != nil {
		return err
	}
	resp, err := spentCurve(st)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// spentCurve returns the privacy curve δ(ε) of the releases recorded in st. Under the
// fixed policy every release has the same cost fixed in advance, so the optimal
// composition theorem (KOV Thm 3.3) applies and the curve is exact; under the adaptive
// policy it does not (the costs were chosen adaptively), and the curve is that of the
// single guarantee the ledger's filter certifies, st.Spent. The ε grid spans
// [0, 1.5·max(total ε, spent ε)]; every δ is an upper value (never below the truth).
func spentCurve(st Status) (*CurveResponse, error) {
	resp := &CurveResponse{Total: st.Total, Points: []CurvePoint{}, Exact: true, Theorem: string(compose.Exact)}
	var ms []compose.Mech
	if st.Policy.Mode == "adaptive" {
		resp.Theorem = "filter"
		if st.Releases > 0 {
			ms = []compose.Mech{{Epsilon: st.Spent.Epsilon, Delta: st.Spent.Delta, Count: 1}}
		}
	} else {
		for i, c := range st.Costs {
			ms = append(ms, compose.Mech{Epsilon: c.Epsilon, Delta: c.Delta, Count: st.Counts[i]})
		}
	}
	if len(ms) == 0 {
		return resp, nil
	}
	curve, err := compose.NewCurve(ms, nil)
	if err != nil {
		return nil, err
	}
	resp.Exact = curve.Exact()
	hi := 1.5 * math.Max(st.Total.Epsilon, math.Min(st.Spent.Epsilon, curve.MaxEpsilon()))
	if !(hi > 0) || math.IsInf(hi, 0) {
		hi = 1
	}
	for i := range curvePoints {
		eps := hi * float64(i) / float64(curvePoints-1)
		delta, _, err := curve.Delta(eps)
		if err != nil {
			return nil, err
		}
		resp.Points = append(resp.Points, CurvePoint{Epsilon: eps, Delta: delta})
	}
	return resp, nil
}

func (s *Server) grant(w http.ResponseWriter, r *http.Request) error {
	return s.setGrant(w, r, true)
}

func (s *Server) ungrant(w http.ResponseWriter, r *http.Request) error {
	return s.setGrant(w, r, false)
}

func (s *Server) setGrant(w http.ResponseWriter, r *http.Request, on bool) error {
	p, err := s.authAdmin(r)
	if err != nil {
		return err
	}
	d, err := s.lookup(r.Context(), p, r.PathValue("name"))
	if err != nil {
		return err
	}
	id := r.PathValue("key")
	if !s.keyExists(r.Context(), id) {
		return errorf(http.StatusNotFound, "key %q not found", id)
	}
	if on {
		err = s.store.Grant(r.Context(), id, d.spec.Name)
	} else {
		err = s.store.Revoke(r.Context(), id, d.spec.Name)
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) keyExists(ctx context.Context, id string) bool {
	keys, err := s.store.Keys(ctx)
	if err != nil {
		return false
	}
	for _, k := range keys {
		if k.ID == id && !k.Revoked {
			return true
		}
	}
	return false
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.authAdmin(r); err != nil {
		return err
	}
	keys, err := s.store.Keys(r.Context())
	if err != nil {
		return err
	}
	if keys == nil {
		keys = []KeyRecord{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"keys": keys})
	return nil
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request) error {
	var req CreateKeyRequest
	if err := s.adminBody(w, r, &req); err != nil {
		return err
	}
	if req.Role != Admin && req.Role != Analyst {
		return &dpkit.ParamError{Name: "role", Value: string(req.Role), Want: `"admin" or "analyst"`}
	}
	if strings.TrimSpace(req.Name) == "" || len(req.Name) > 100 {
		return &dpkit.ParamError{Name: "name", Value: req.Name, Want: "a non-empty name of at most 100 bytes"}
	}
	for i, name := range req.Datasets {
		if _, err := s.dataset(r.Context(), name); err != nil {
			return &dpkit.ParamError{Name: fmt.Sprintf("datasets[%d]", i), Value: name, Want: "a registered dataset"}
		}
	}
	k, secret, err := s.CreateKey(r.Context(), req.Name, req.Role, req.Datasets)
	if err != nil {
		return err
	}
	ds := req.Datasets
	if ds == nil {
		ds = []string{}
	}
	writeJSON(w, http.StatusCreated, CreateKeyResponse{KeyRecord: k, Key: secret, Datasets: ds})
	return nil
}

func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request) error {
	p, err := s.authAdmin(r)
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	if id == p.ID {
		return errorf(http.StatusConflict, "a key cannot revoke itself")
	}
	if err := s.store.RevokeKey(r.Context(), id); err != nil {
		return err
	}
	s.forgetKeys()
	w.WriteHeader(http.StatusNoContent)
	return nil
}
