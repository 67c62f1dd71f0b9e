package server

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"

	"io"
	"log"
	"net"
	"net/http"

	"strings"
	"sync"
	"time"

	"github.com/dpkit/dpkit/internal/datasource"
	"github.com/dpkit/dpkit/internal/registry"
	"github.com/dpkit/dpkit/internal/sqldb"
	"github.com/dpkit/dpkit/ledger"
	"github.com/dpkit/dpkit/ledger/postgres"
	"github.com/dpkit/dpkit/ledger/sqlite"
	"github.com/dpkit/dpkit/noise"
	"github.com/dpkit/dpkit/query"
	"github.com/dpkit/dpkit/query/pushdown"
)

// DefaultMaxBody is the default limit on request bodies (1 MiB).
const DefaultMaxBody = 1 << 20

// Options configures a Server. Registry, Ledger and Engine are required (Open sets them).
type Options struct {
	Registry *registry.Registry
	Ledger   Accountant
	Engine   Engine

	// Source of the noise; nil means noise.Secure(). It must be safe for concurrent use.
	Source noise.Source
	// MaxBody limits request bodies in bytes; 0 means DefaultMaxBody.
	MaxBody int64
	// FileLimits bound the CSV files registered by "path" (the zero value: the
	// defaults of package datasource).
	FileLimits datasource.Limits
	// QueryTimeout limits the computation of one query's answer; 0 means
	// DefaultQueryTimeout.
	QueryTimeout time.Duration
	// StatementTimeout limits the SQL statement of a query on a live table (PostgreSQL's
	// statement_timeout; the query's time limit is this and a few seconds); 0 means
	// pushdown.DefaultStatementTimeout.
	StatementTimeout time.Duration
	// MaxComputing bounds the queries computed at once (others wait, within their time
	// limit); 0 means twice GOMAXPROCS.
	MaxComputing int
	// ErrorLog receives internal errors (never sent to clients); nil discards them.
	ErrorLog *log.Logger
}

// Server is the dpkit query service: an http.Handler over a Store, a ledger and the
// query layer. Create it with New.
type Server struct {
	opts    Options
	reg     *registry.Registry
	ledger  Accountant
	engine  Engine
	src     noise.Source
	mux     *http.ServeMux
	keys    keyCache
	mu      sync.Mutex
	data    map[string]*dataset
	created sync.Mutex        // serialises dataset registration
	work    chan struct{}     // one token per query being computed
	live    []*pushdown.Table // live tables opened (guarded by mu), closed by Close
}

// dataset is a registered dataset; its table is loaded on first use.
type dataset struct {
	spec   DatasetSpec
	rec    registry.DatasetRecord
	schema query.Schema

	mu    sync.Mutex // guards table
	table Table      // nil until loaded
}

// New returns a Server over opts.
func New(opts Options) (*Server, error) {
	if opts.Registry == nil || opts.Ledger == nil || opts.Engine == nil {
		return nil, errors.New("server: Options.Registry, Ledger and Engine are required")
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.Source == nil {
		opts.Source = noise.Secure()
	}
	if opts.QueryTimeout <= 0 {
		opts.QueryTimeout = DefaultQueryTimeout
	}
	if opts.StatementTimeout <= 0 {
		opts.StatementTimeout = pushdown.DefaultStatementTimeout
	}
	if opts.MaxComputing <= 0 {
		opts.MaxComputing = 2 * runtime.GOMAXPROCS(0)
	}
	s := &Server{opts: opts, reg: opts.Registry, ledger: opts.Ledger, engine: opts.Engine, src: opts.Source, data: map[string]*dataset{},
		work: make(chan struct{}, opts.MaxComputing)}
	s.routes()
	return s, nil
}

// Open opens the service's state in the database dsn — a SQLite file (created if
// missing) or a postgres:// URL — with one connection pool that the ledger and the
// registry share: the ledger first (it marks a new SQLite file as dpkit's), then the
// registry. It returns a Server with opts' other settings (its Registry and Ledger are
// set, and Engine if nil) and a function that closes the database.
func Open(ctx context.Context, dsn string, opts Options) (*Server, func(), error) {
	db, err := sqldb.Open(ctx, dsn, &sqldb.Options{Create: true, AppName: "dpkit-serve"})
	if err != nil {
		return nil, nil, err
	}
	var ls ledger.Store
	if db.Dialect == sqldb.Postgres {
		// Several processes may share one PostgreSQL database: the ledger locks the
		// dataset budget's row in each spend, so together they never over-spend.
		ls, err = postgres.New(ctx, db, &postgres.Options{Create: true})
	} else {
		ls, err = sqlite.New(ctx, db, &sqlite.Options{Create: true})
	}
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	closeAll := func() { ls.Close(); db.Close() }
	if opts.Registry, err = registry.Open(ctx, db); err != nil {
		closeAll()
		return nil, nil, err
	}
	opts.Ledger = LedgerAccountant{L: ledger.New(ls)}
	if opts.Engine == nil {
		opts.Engine = QueryEngine{}
	}
	s, err := New(opts)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	return s, func() { s.Close(); closeAll() }, nil
}

// Close closes the connections to the databases of live tables (the service's own
// database is closed by whoever opened it: Open's close function does both).
func (s *Server) Close() { s.closeLive() }

// ServeHTTP serves the API and the page.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	s.mux.ServeHTTP(w, r)
}

// maxHeaderBytes bounds the request headers (http.Server.MaxHeaderBytes).
const maxHeaderBytes = 64 << 10

// Serve serves on ln (a TLS listener for HTTPS) until ctx is cancelled, then shuts down
// gracefully: it stops accepting connections and waits up to 10 s for requests in
// flight. Every error response is in the JSON error shape, including those net/http
// writes itself for malformed requests (see jsonErrorListener).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	ln = jsonErrorListener{ln}
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60*time.Second + max(s.opts.QueryTimeout, s.opts.StatementTimeout+liveGrace),
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          s.opts.ErrorLog,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	if s.opts.ErrorLog == nil {
		hs.ErrorLog = log.New(io.Discard, "", 0)
	}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := hs.Shutdown(sctx)
	<-done
	return err
}

// handler adapts a handler that returns an error.
type handler func(w http.ResponseWriter, r *http.Request) error

// route registers h for pattern ("METHOD /path") and, once per path, a method-less
// fallback that answers 405 in the JSON error shape with an Allow header.
func (s *Server) route(pattern string, h handler, allow map[string][]string) {
	method, path, _ := strings.Cut(pattern, " ")
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})
	if _, seen := allow[path]; !seen {
		s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", strings.Join(allow[path], ", "))
			s.writeError(w, r, errorf(http.StatusMethodNotAllowed, "method %s not allowed on %s: use %s", r.Method, path, strings.Join(allow[path], " or ")))
		})
	}
	allow[path] = append(allow[path], method)
	if method == http.MethodGet {
		allow[path] = append(allow[path], http.MethodHead)
	}
}

func (s *Server) routes() {
	s.mux = http.NewServeMux()
	allow := map[string][]string{}
	s.route("GET /healthz", s.healthz, allow)
	s.route("GET /v1/whoami", s.whoami, allow)
	s.route("GET /v1/datasets", s.listDatasets, allow)
	s.route("POST /v1/datasets", s.createDataset, allow)
	s.route("GET /v1/datasets/{name}", s.getDataset, allow)
	s.route("POST /v1/datasets/{name}/query", s.query, allow)
	s.route("GET /v1/datasets/{name}/budget", s.budget, allow)
	s.route("GET /v1/datasets/{name}/releases", s.releases, allow)
	s.route("GET /v1/datasets/{name}/curve", s.curve, allow)
	s.route("PUT /v1/datasets/{name}/grants/{key}", s.grant, allow)
	s.route("DELETE /v1/datasets/{name}/grants/{key}", s.ungrant, allow)
	s.route("GET /v1/keys", s.listKeys, allow)
	s.route("POST /v1/keys", s.createKey, allow)
	s.route("DELETE /v1/keys/{id}", s.revokeKey, allow)
	s.routePage(allow)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, errorf(http.StatusNotFound, "no such endpoint: %s %s", r.Method, r.URL.Path))
	})
}

// decode reads the JSON body of r into v: at most MaxBody bytes, no unknown fields, one
// value. The body is read as JSON whatever its Content-Type, so that "curl -d '{…}'"
// works; requests without a Bearer key are refused before, so a cross-site form post
// cannot use it.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) error {
	body := http.MaxBytesReader(w, r.Body, s.opts.MaxBody)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		if errors.Is(err, io.EOF) {
			return errorf(http.StatusBadRequest, "empty request body: want a JSON object")
		}
		return errorf(http.StatusBadRequest, "malformed JSON body: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return errorf(http.StatusBadRequest, "malformed JSON body: more than one JSON value")
	}
	return nil
}
