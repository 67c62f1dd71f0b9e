package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// liveSource creates, in a fresh schema of the test PostgreSQL, the table visits (and a
// view that sleeps before each row, for timeouts) and returns the schema's URL.
func liveSource(t *testing.T) string {
	t.Helper()
	src := newSchema(t)
	exec(t, src,
		`CREATE TABLE visits (patient text, clinic text, cost double precision, days integer)`,
		`INSERT INTO visits SELECT 'p' || (i % 50), CASE WHEN i % 3 = 0 THEN 'north' ELSE 'south' END, (i % 200) * 1.5, i % 9 FROM generate_series(1, 600) i`,
		`CREATE TABLE visits_copy AS SELECT * FROM visits`,
		`CREATE VIEW slow AS SELECT v.* FROM visits_copy v WHERE pg_sleep(0.01) IS NOT NULL`,
	)
	return src
}

// exec runs statements on the database at u.
func exec(t *testing.T, u string, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, s := range stmts {
		if _, err := c.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// liveSpec registers table name of the database src as a live dataset.
func liveSpec(dataset, src, name string) map[string]any {
	return map[string]any{
		"name": dataset,
		"columns": map[string]any{
			"patient": map[string]any{"type": "string"},
			"clinic":  map[string]any{"type": "string", "domain": []string{"north", "south"}},
			"cost":    map[string]any{"type": "float", "min": 0, "max": 300},
			"days":    map[string]any{"type": "int", "min": 0, "max": 10},
		},
		"privacy_unit": map[string]any{"column": "patient", "max_rows": 20},
		"budget":       map[string]any{"epsilon": 1000, "delta": 1e-6},
		"policy":       map[string]any{"mode": "adaptive"},
		"table":        map[string]any{"url": src, "name": name, "mode": "live"},
	}
}

// countQuery is a query whose noise at ε = 50 (geometric, Δ = 20) is within ±3 with
// probability > 1 − 10^-6 per group.
func countQuery(dataset string) map[string]any {
	return map[string]any{"sql": "SELECT COUNT(*) FROM " + dataset + " GROUP BY clinic", "epsilon": 50.0}
}

// TestLiveTable: a live table is registered without being copied (the response says
// "live", admins see its origin without the password), answers queries computed inside
// PostgreSQL, follows the table's changes, survives a restart of the service, and
// refuses what cannot run inside the database (MEDIAN) with a 400 before computing.
func TestLiveTable(t *testing.T) {
	src := liveSource(t)
	db := t.TempDir() + "/dpkit.db"
	e := newEnvAt(t, db)
	info := e.must(201, "POST", "/v1/datasets", e.admin, liveSpec("v", src, "visits"))
	if info["live"] != true || !strings.Contains(info["source"].(string), `"visits" of postgres://`) || !strings.Contains(info["source"].(string), "(live)") {
		t.Fatalf("info %v", info)
	}
	e.must(204, "PUT", "/v1/datasets/v/grants/"+keyID(t, e, e.analyst), e.admin, nil)
	// 600 rows, 200 north (i ≡ 0 mod 3) and 400 south, 50 patients of 12 rows each (≤ 20).
	check := func(e *env, north, south float64) {
		t.Helper()
		a := e.must(200, "POST", "/v1/datasets/v/query", e.analyst, countQuery("v"))
		gs := a["groups"].([]any)
		got := []float64{gs[0].(map[string]any)["value"].(float64), gs[1].(map[string]any)["value"].(float64)}
		if d0, d1 := got[0]-north, got[1]-south; d0 < -3 || d0 > 3 || d1 < -3 || d1 > 3 {
			t.Fatalf("counts %v, want ≈ [%v %v]", got, north, south)
		}
	}
	check(e, 200, 400)
	exec(t, src, `INSERT INTO visits SELECT 'q' || i, 'north', 10, 1 FROM generate_series(1, 100) i`)
	check(e, 300, 400) // the table changed: the next query sees it
	e.mustError(400, "MEDIAN cannot be computed inside the database", "POST", "/v1/datasets/v/query", e.analyst,
		map[string]any{"sql": "SELECT MEDIAN(cost) FROM v", "epsilon": 1.0})
	// A restart: the live table is opened again from the registry.
	e.closeDB()
	e2 := &env{t: t, db: db, admin: e.admin, analyst: e.analyst}
	srv, closeDB := openWith(t, db, Options{QueryTimeout: time.Second})
	e2.srv, e2.closeDB = srv, closeDB
	e2.ts = newTestServer(t, srv)
	t.Cleanup(closeDB)
	check(e2, 300, 400)
}

// keyID returns the id of the API key key.
func keyID(t *testing.T, e *env, key string) string {
	t.Helper()
	return e.must(200, "GET", "/v1/whoami", key, nil)["id"].(string)
}

// ledgerState is what the ledger says of a dataset: spent, releases, the audit log.
func ledgerState(e *env, dataset string) string {
	b := e.must(200, "GET", "/v1/datasets/"+dataset+"/budget", e.admin, nil)
	r := e.must(200, "GET", "/v1/datasets/"+dataset+"/releases", e.admin, nil)
	return jsonText(e.t, []any{b["spent"], b["releases"], r["releases"]})
}

// TestLiveTableFailures: a statement timeout (422), a lost connection and an unreachable
// database, a refused read, and a table whose declared column was dropped or retyped
// (503 each, the cause in the server's log, not in the answer) charge nothing: the
// budget and the audit log are unchanged, and the dataset answers again once the cause
// is gone.
func TestLiveTableFailures(t *testing.T) {
	src := liveSource(t)
	px := newProxy(t, src)
	var logged strings.Builder
	var mu sync.Mutex
	opts := Options{QueryTimeout: time.Second, StatementTimeout: 2 * time.Second, ErrorLog: log.New(lockedWriter{&logged, &mu}, "", 0)}
	e := newEnvWith(t, t.TempDir()+"/dpkit.db", smallDemo(), opts)
	e.must(201, "POST", "/v1/datasets", e.admin, liveSpec("v", px.url, "visits"))
	e.must(201, "POST", "/v1/datasets", e.admin, liveSpec("slow", src, "slow"))
	role := newRole(t, src)
	e.must(201, "POST", "/v1/datasets", e.admin, liveSpec("ro", withUser(t, src, role), "visits"))
	for _, d := range []string{"v", "ro"} {
		e.must(200, "POST", "/v1/datasets/"+d+"/query", e.admin, map[string]any{"sql": "SELECT COUNT(*) FROM " + d + " WHERE days > 100", "epsilon": 1.0})
	}
	fails := func(dataset string, status int, msg string) {
		t.Helper()
		before := ledgerState(e, dataset)
		e.mustError(status, msg, "POST", "/v1/datasets/"+dataset+"/query", e.admin, countQuery(dataset))
		if after := ledgerState(e, dataset); after != before {
			t.Fatalf("%s: the ledger changed:\n%s\n%s", dataset, before, after)
		}
	}
	// Statement timeout: 600 rows × 10 ms > 2 s.
	fails("slow", 422, "did not finish within the statement timeout of 2s")
	// Lost connection: the proxy drops every connection while the statement runs (the
	// view sleeps), then refuses new ones (unreachable).
	e.must(201, "POST", "/v1/datasets", e.admin, liveSpec("slowpx", px.url, "slow"))
	go px.dropWhenActive(src, `%"slow"%`)
	fails("slowpx", 503, "dataset \"slowpx\" is unavailable: its database cannot be reached")
	px.stop()
	fails("v", 503, "dataset \"v\" is unavailable: its database cannot be reached")
	px.start()
	e.must(200, "POST", "/v1/datasets/v/query", e.admin, countQuery("v"))
	// Permission: the role's SELECT is taken back.
	exec(t, src, "REVOKE SELECT ON visits FROM "+role)
	fails("ro", 503, "dataset \"ro\" is unavailable: its database refused to read the table")
	exec(t, src, "GRANT SELECT ON visits TO "+role)
	e.must(200, "POST", "/v1/datasets/ro/query", e.admin, countQuery("ro"))
	// The table changed under the declaration: a column retyped, then dropped.
	exec(t, src, "ALTER TABLE visits ALTER COLUMN days TYPE text")
	fails("v", 503, "the table no longer has the declared columns")
	exec(t, src, "ALTER TABLE visits DROP COLUMN days")
	fails("v", 503, "the table no longer has the declared columns")
	exec(t, src, "ALTER TABLE visits ADD COLUMN days integer")
	e.must(200, "POST", "/v1/datasets/v/query", e.admin, countQuery("v"))

	mu.Lock()
	logText := logged.String()
	mu.Unlock()
	for _, want := range []string{"permission denied for table visits", "to be read as int", "a column of table"} {
		if !strings.Contains(logText, want) {
			t.Errorf("the server's log does not say %q:\n%s", want, logText)
		}
	}
}

// newRole creates a login role that may read visits and returns its name (dropped when
// the test ends).
func newRole(t *testing.T, src string) string {
	t.Helper()
	b := make([]byte, 4)
	rand.Read(b)
	role := "dpkit_ro_" + hex.EncodeToString(b)
	u, _ := url.Parse(src)
	schema := u.Query().Get("search_path")
	exec(t, src, "CREATE ROLE "+role+" LOGIN", "GRANT USAGE ON SCHEMA "+schema+" TO "+role, "GRANT SELECT ON visits TO "+role)
	t.Cleanup(func() {
		ctx := context.Background()
		if c, err := pgx.Connect(ctx, src); err == nil {
			c.Exec(ctx, "DROP OWNED BY "+role)
			c.Exec(ctx, "DROP ROLE "+role)
			c.Close(ctx)
		}
	})
	return role
}

// withUser returns src with the user name role.
func withUser(t *testing.T, src, role string) string {
	t.Helper()
	u, err := url.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	return u.String()
}

// proxy forwards TCP connections to the PostgreSQL of a URL, and can drop them all or
// refuse new ones: a database whose connection is lost, or that cannot be reached.
type proxy struct {
	t      *testing.T
	target string // host:port
	url    string // the source URL through the proxy
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func newProxy(t *testing.T, src string) *proxy {
	t.Helper()
	u, err := url.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, target: u.Host}
	p.start()
	u.Host = p.addr
	p.url = u.String()
	t.Cleanup(p.stop)
	return p
}

// start listens (on the same address after a stop).
func (p *proxy) start() {
	addr := p.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			d, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, d)
			p.mu.Unlock()
			go func() { io.Copy(d, c); d.Close() }()
			go func() { io.Copy(c, d); c.Close() }()
		}
	}()
}

// drop closes every forwarded connection.
func (p *proxy) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// dropWhenActive drops every connection once a statement like pattern runs on the
// database src (or after 10 s).
func (p *proxy) dropWhenActive(src, pattern string) {
	defer p.drop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, src)
	if err != nil {
		return
	}
	defer c.Close(context.Background())
	for ctx.Err() == nil {
		var n int
		if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE $1 AND pid <> pg_backend_pid()`, pattern).Scan(&n); err != nil || n > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stop stops listening and drops every connection.
func (p *proxy) stop() {
	p.mu.Lock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	p.mu.Unlock()
	p.drop()
}

// lockedWriter is a writer to a builder guarded by a mutex (the server's log).
type lockedWriter struct {
	b  *strings.Builder
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// jsonText is v as JSON text.
func jsonText(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// newTestServer serves srv on a test HTTP server closed when the test ends.
func newTestServer(t testing.TB, srv *Server) *httptest.Server {
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts
}
