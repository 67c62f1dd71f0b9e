package server

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpkit/dpkit/internal/sqldb"
	"github.com/dpkit/dpkit/noise"
)

// lockedSource makes a seeded Source safe for concurrent handlers.
type lockedSource struct {
	mu  sync.Mutex
	src noise.Source
}

func (l *lockedSource) Uint64() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.src.Uint64()
}

// env is a service over a real SQLite ledger and store in a temporary file, with the
// demo datasets and keys.
type env struct {
	t       testing.TB
	db      string
	srv     *Server
	ts      *httptest.Server
	admin   string
	analyst string
	closeDB func() // closes the database (once; also at the end of the test)
}

// open builds a Server over the database db — a SQLite file (created if needed) or a
// PostgreSQL URL — as "dpkit serve" does.
func open(t testing.TB, db string) (*Server, func()) {
	t.Helper()
	return openWith(t, db, Options{QueryTimeout: testQueryTimeout})
}

// testQueryTimeout is the tests' per-query time limit: shorter than the default, because
// a query that loses the race for the last of a budget is refused when its time is up
// (see Server.Query), which the load tests provoke; long enough that a query on a small
// table finishes within it under the race detector on a loaded two-core machine (at
// 1 s, one did not).
const testQueryTimeout = 3 * time.Second

// openWith is open with the given options (a seeded noise source is added).
func openWith(t testing.TB, db string, opts Options) (*Server, func()) {
	t.Helper()
	opts.Source = &lockedSource{src: noise.Seeded(1)}
	srv, closeDB, err := Open(context.Background(), db, opts)
	if err != nil {
		t.Fatal(err)
	}
	return srv, closeDB
}

// rawDB opens the database db a second time, as an outside tool would, to look at or
// change its tables behind the service's back.
func rawDB(t testing.TB, db string) *sql.DB {
	t.Helper()
	h, err := sqldb.Open(context.Background(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h.SQL
}

// newEnv is an env over a fresh SQLite file.
func newEnv(t testing.TB) *env {
	t.Helper()
	return newEnvAt(t, filepath.Join(t.TempDir(), "dpkit.db"))
}

// smallDemo is the demo without its large dataset (visits, 1.2·10^5 rows, whose
// registration takes a second): the slides' flu and salary tables, for the tests that do
// not need visits.
func smallDemo() []CreateDatasetRequest { return DemoDatasets()[1:] }

// newEnvAt is an env over the database db (a SQLite path or a PostgreSQL URL) with the
// small demo.
func newEnvAt(t testing.TB, db string) *env {
	t.Helper()
	return newEnvDemo(t, db, smallDemo())
}

// newEnvDemo is an env over the database db with the given demo datasets.
func newEnvDemo(t testing.TB, db string, demo []CreateDatasetRequest) *env {
	t.Helper()
	return newEnvWith(t, db, demo, Options{QueryTimeout: testQueryTimeout})
}

// newEnvWith is an env over the database db with the given demo datasets and options.
func newEnvWith(t testing.TB, db string, demo []CreateDatasetRequest, opts Options) *env {
	t.Helper()
	e := &env{t: t, db: db}
	srv, closeDB := openWith(t, e.db, opts)
	var once sync.Once
	e.closeDB = func() { once.Do(closeDB) }
	keys, err := srv.setUpDemo(context.Background(), demo)
	if err != nil {
		t.Fatal(err)
	}
	e.srv, e.admin, e.analyst = srv, keys.AdminKey, keys.AnalystKey
	e.ts = httptest.NewServer(srv)
	t.Cleanup(func() { e.ts.Close(); e.closeDB() })
	return e
}

// do sends a request with an optional Bearer key and JSON body (a string is sent as is).
func (e *env) do(method, path, key string, body any) (int, map[string]any, http.Header) {
	e.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		r = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, e.ts.URL+path, r)
	if err != nil {
		e.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := e.ts.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	var v map[string]any
	if len(raw) > 0 && strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &v); err != nil {
			e.t.Fatalf("%s %s: body is not a JSON object: %v\n%s", method, path, err, raw)
		}
	}
	return res.StatusCode, v, res.Header
}

// must sends a request and fails unless the status is want.
func (e *env) must(want int, method, path, key string, body any) map[string]any {
	e.t.Helper()
	code, v, _ := e.do(method, path, key, body)
	if code != want {
		e.t.Fatalf("%s %s: status %d, want %d; body %v", method, path, code, want, v)
	}
	return v
}

// mustError checks the one error shape: status want and {"error": "...substr..."}.
func (e *env) mustError(want int, substr, method, path, key string, body any) map[string]any {
	e.t.Helper()
	code, v, h := e.do(method, path, key, body)
	if code != want {
		e.t.Fatalf("%s %s: status %d, want %d; body %v", method, path, code, want, v)
	}
	if ct := h.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		e.t.Fatalf("%s %s: Content-Type %q, want JSON", method, path, ct)
	}
	msg, ok := v["error"].(string)
	if !ok || msg == "" {
		e.t.Fatalf("%s %s: no \"error\" string in %v", method, path, v)
	}
	for k := range v {
		if k != "error" && k != "position" {
			e.t.Fatalf("%s %s: error body has extra key %q: %v", method, path, k, v)
		}
	}
	if !strings.Contains(msg, substr) {
		e.t.Fatalf("%s %s: error %q does not contain %q", method, path, msg, substr)
	}
	return v
}

func num(t *testing.T, v map[string]any, key string) float64 {
	t.Helper()
	f, ok := v[key].(float64)
	if !ok {
		t.Fatalf("%q = %#v, want a number (in %v)", key, v[key], v)
	}
	return f
}

func obj(t *testing.T, v map[string]any, key string) map[string]any {
	t.Helper()
	o, ok := v[key].(map[string]any)
	if !ok {
		t.Fatalf("%q = %#v, want an object (in %v)", key, v[key], v)
	}
	return o
}
