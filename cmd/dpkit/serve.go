package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/dpkit/dpkit/internal/datasource"
	"github.com/dpkit/dpkit/internal/demodata"
	"github.com/dpkit/dpkit/internal/server"
	"github.com/dpkit/dpkit/query/pushdown"
)

const serveUsage = `Usage: dpkit serve [--addr HOST:PORT] [--db PATH|postgres://…] [--demo [--reset]]
                   [--tls-cert FILE --tls-key FILE] [limits]

Run the dpkit query service: analysts send aggregate SQL queries over registered
datasets and get noisy answers with their accuracy; every answer is charged to the
dataset's privacy budget in the ledger, and recorded, before it is returned. Queries
that would exceed a budget are refused before they touch the data. The web page is at
the printed URL; "dpkit admin" administers the service through its API.

Flags:
  --addr HOST:PORT    address to listen on (default 127.0.0.1:8080; port 0 picks a
                      free one). Serving beyond the loopback interface without TLS
                      prints a warning: keys and answers would cross the network in
                      clear text (use --tls-cert/--tls-key, or a TLS reverse proxy
                      in front of a loopback address; see docs/service.md)
  --db PATH|URL       the database of the ledger, datasets and API keys: a SQLite file
                      (default dpkit.db, created if missing) or a postgres:// URL
                      (tables in the first schema of its search_path; several
                      servers may share one PostgreSQL database)
  --demo              register the demo datasets if missing — visits (1.2·10^5
                      synthetic clinic visits by 60 000 patients) and the lecture
                      slides' flu and salary tables (5 rows each); each with budget
                      ε = 1, δ = 1e-6, fixed policy, at most 20 queries — and mint a
                      new demo admin key and demo analyst key (the demo keys of
                      earlier starts are revoked)
  --reset             with --demo: start over with fresh budgets. The SQLite --db is
                      moved aside (renamed PATH.reset-TIME, never deleted) if it holds
                      the demo datasets and nothing else; otherwise nothing is done
                      and serve stops (use a fresh --db)
  --tls-cert FILE     serve HTTPS with this certificate (PEM; chain first) …
  --tls-key FILE      … and its private key (PEM); both or neither
  --max-body BYTES    largest request body accepted (default 1048576)
  --query-timeout D   time limit of one query's computation (default 10s); a query
                      over it is refused (422), nothing charged
  --statement-timeout D  time limit of the SQL statement of a query on a live table,
                      run inside its PostgreSQL database (default 5m0s); a query over
                      it is refused (422), nothing charged
  --max-file-bytes N  largest CSV file a dataset may be registered from by "path"
                      (default 1073741824)
  --max-line-bytes N  longest line of such a file (default 1048576)
  -h, --help          show this help

The first line of standard output is one JSON object:
  {"admin_key":…,"analyst_key":…,"url":…}
with the keys minted by this start ("analyst_key" with --demo only; "admin_key" with
--demo, or when the database has no admin key yet). Keys are stored hashed: they are
printed once. Human-readable help follows. Restarting with the same --db keeps
datasets, keys and budgets; a budget is never reset in place.

The service stops gracefully on SIGINT or SIGTERM. See docs/service.md for the API.

Exit status: 0 stopped by a signal; 1 the database, the address or the certificate
cannot be used, or --reset was refused; 2 usage error.

Examples:
  dpkit serve --demo
  dpkit serve --demo --reset
  dpkit serve --addr 0.0.0.0:8443 --tls-cert cert.pem --tls-key key.pem --db /var/lib/dpkit/ledger.db
  dpkit serve --db 'postgres://dpkit@db.internal/dpkit?search_path=dpkit'
`

// serveCommand is "dpkit serve".
type serveCommand struct {
	stdout, stderr io.Writer

	addr         string
	db           string
	demo, reset  bool
	maxBody      int64
	queryTimeout time.Duration
	stmtTimeout  time.Duration
	maxFileBytes int64
	maxLineBytes int
	tlsCert      string
	tlsKey       string
}

func init() {
	register(command{name: "serve", order: 100,
		summary: "run the query service (HTTP API and web page) over the budget ledger",
		build:   func(s streams) *cobra.Command { return newServeCommand(s.stdout, s.stderr) }})
}

func newServeCommand(stdout, stderr io.Writer) *cobra.Command {
	c := &serveCommand{stdout: stdout, stderr: stderr}
	cmd := &cobra.Command{
		Use:  "serve",
		Args: cobra.ArbitraryArgs, // Run rejects them with a usage error
		RunE: func(cmd *cobra.Command, args []string) error { return c.Run(cmd.Context(), args) },
	}
	flags := cmd.Flags()
	flags.StringVar(&c.addr, "addr", "127.0.0.1:8080", "")
	flags.StringVar(&c.db, "db", "dpkit.db", "")
	flags.BoolVar(&c.demo, "demo", false, "")
	flags.BoolVar(&c.reset, "reset", false, "")
	flags.Int64Var(&c.maxBody, "max-body", server.DefaultMaxBody, "")
	flags.DurationVar(&c.queryTimeout, "query-timeout", server.DefaultQueryTimeout, "")
	flags.DurationVar(&c.stmtTimeout, "statement-timeout", pushdown.DefaultStatementTimeout, "")
	flags.Int64Var(&c.maxFileBytes, "max-file-bytes", datasource.DefaultMaxFileBytes, "")
	flags.IntVar(&c.maxLineBytes, "max-line-bytes", datasource.DefaultMaxLineBytes, "")
	flags.StringVar(&c.tlsCert, "tls-cert", "", "")
	flags.StringVar(&c.tlsKey, "tls-key", "", "")
	withUsage(cmd, serveUsage)
	return cmd
}

// check validates the flags.
func (c *serveCommand) check(args []string) error {
	switch {
	case len(args) > 0:
		return usagef("unexpected argument %q", args[0])
	case c.maxBody < 1:
		return usagef("invalid --max-body %d: want a positive number of bytes", c.maxBody)
	case c.queryTimeout <= 0:
		return usagef("invalid --query-timeout %v: want a positive duration such as 10s", c.queryTimeout)
	case c.stmtTimeout < time.Millisecond:
		return usagef("invalid --statement-timeout %v: want a duration of at least 1ms, such as 5m", c.stmtTimeout)
	case c.maxFileBytes < 1:
		return usagef("invalid --max-file-bytes %d: want a positive number of bytes", c.maxFileBytes)
	case c.maxLineBytes < 1:
		return usagef("invalid --max-line-bytes %d: want a positive number of bytes", c.maxLineBytes)
	case strings.TrimSpace(c.db) == "":
		return usagef("invalid --db \"\": want a file path or a postgres:// URL")
	case c.reset && !c.demo:
		return usagef("--reset starts the demo over: use it with --demo")
	case (c.tlsCert == "") != (c.tlsKey == ""):
		return usagef("--tls-cert and --tls-key go together: give both or neither")
	}
	if _, _, err := net.SplitHostPort(c.addr); err != nil {
		return usagef("invalid --addr %q: want HOST:PORT, e.g. 127.0.0.1:8080", c.addr)
	}
	return nil
}

// serveBanner is the first line of standard output.
type serveBanner struct {
	AdminKey   string `json:"admin_key,omitempty"`
	AnalystKey string `json:"analyst_key,omitempty"`
	URL        string `json:"url"`
}

// Run opens the database, sets up the demo if asked, and serves until ctx is cancelled
// or SIGTERM arrives.
func (c *serveCommand) Run(ctx context.Context, args []string) error {
	if err := c.check(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM)
	defer stop()
	if c.reset {
		aside, err := server.ResetDemo(ctx, c.db)
		if err != nil {
			return err
		}
		if aside != "" {
			fmt.Fprintf(c.stderr, "dpkit serve: --reset: moved %s aside to %s; starting the demo over\n", c.db, aside)
		}
	}
	ln, err := c.listen()
	if err != nil {
		return err
	}
	defer ln.Close()
	srv, closeDB, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer closeDB()

	banner := serveBanner{URL: "http://" + ln.Addr().String()}
	if c.tlsCert != "" {
		banner.URL = "https://" + ln.Addr().String()
	}
	var spent []string
	if c.demo {
		keys, err := srv.SetUpDemo(ctx)
		if err != nil {
			return err
		}
		banner.AdminKey, banner.AnalystKey, spent = keys.AdminKey, keys.AnalystKey, keys.Spent
	} else if banner.AdminKey, err = srv.Bootstrap(ctx); err != nil {
		return err
	}
	if err := writeJSON(c.stdout, banner); err != nil {
		return err
	}
	c.printHelp(banner, spent)
	c.warnPlainText(ln)
	if err := srv.Serve(ctx, ln); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// listen opens the listener: TLS with --tls-cert/--tls-key.
func (c *serveCommand) listen() (net.Listener, error) {
	var cfg *tls.Config
	if c.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(c.tlsCert, c.tlsKey)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert %s --tls-key %s: %w", c.tlsCert, c.tlsKey, err)
		}
		cfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", c.addr, err)
	}
	if cfg != nil {
		ln = tls.NewListener(ln, cfg)
	}
	return ln, nil
}

// warnPlainText warns, on standard error, when the service listens beyond the loopback
// interface without TLS.
func (c *serveCommand) warnPlainText(ln net.Listener) {
	addr, ok := ln.Addr().(*net.TCPAddr)
	if c.tlsCert != "" || !ok || addr.IP.IsLoopback() {
		return
	}
	fmt.Fprintf(c.stderr, "dpkit serve: WARNING: listening on %s without TLS: API keys and answers cross the network in clear text. "+
		"Serve HTTPS with --tls-cert and --tls-key, or listen on 127.0.0.1 behind a TLS reverse proxy (docs/service.md).\n", addr)
}

// open opens the database with one connection pool for the ledger and the service's
// registry (server.Open).
func (c *serveCommand) open(ctx context.Context) (*server.Server, func(), error) {
	return server.Open(ctx, c.db, server.Options{
		MaxBody:          c.maxBody,
		QueryTimeout:     c.queryTimeout,
		StatementTimeout: c.stmtTimeout,
		FileLimits:       datasource.Limits{MaxFileBytes: c.maxFileBytes, MaxLineBytes: c.maxLineBytes},
		ErrorLog:         log.New(c.stderr, "dpkit serve: ", log.LstdFlags),
	})
}

// stays is the exact answer of the demo's first query: visits with days > 0.
func stays() int {
	n := 0
	for _, v := range demodata.Rows() {
		if v.Days > 0 {
			n++
		}
	}
	return n
}

// printHelp prints what to do next, with commands ready to paste; for the demo, which
// demo datasets have spent their budget and how to start over.
func (c *serveCommand) printHelp(b serveBanner, spent []string) {
	w := c.stdout
	fmt.Fprintf(w, "\ndpkit query service listening on %s (web page: %s/)\n", b.URL, b.URL)
	switch {
	case c.demo:
		fmt.Fprintf(w, `
Demo datasets (each: budget epsilon = 1, delta = 1e-6, at most 20 queries, fixed policy,
each query pure epsilon-DP: epsilon0 = 0.05695, delta0 = 0):
  visits  %d synthetic clinic visits by %d patients (privacy unit: patient,
          at most %d rows each): age, region, month, diagnosis, cost, days
  flu, salary  the 5-row tables of the lecture slides (answers are mostly noise)

Ask a question as the analyst: how many visits led to a hospital stay? (The exact
answer is %d: the synthetic data are public, so you can compare.)
  curl -s -H 'Authorization: Bearer %s' \
    -d '{"sql":"SELECT COUNT(*) FROM visits WHERE days > 0"}' %s/v1/datasets/visits/query

or with the command line (a client of the same API; --json everywhere):
  export DPKIT_URL=%s DPKIT_KEY=%s
  dpkit admin query visits "SELECT AVG(cost) FROM visits WHERE diagnosis = 'flu'"
  dpkit admin datasets

Open %s/ in a browser and paste a key to see budgets, the privacy curve and releases.
The keys are shown only now (they are stored hashed); each --demo start mints new demo
keys and revokes the previous ones.
`, len(demodata.Rows()), demodata.Patients, demodata.MaxVisits, stays(), b.AnalystKey, b.URL, b.URL, b.AnalystKey, b.URL)
		if len(spent) > 0 {
			fmt.Fprintf(w, "\nThe demo budget of %s is spent: every query on it is refused. Start the demo over\n"+
				"with fresh budgets: dpkit serve --demo --reset (or choose another --db).\n", strings.Join(spent, ", "))
			fmt.Fprintf(c.stderr, "dpkit serve: the demo budget of %s is spent; start over with --demo --reset\n", strings.Join(spent, ", "))
		}
	case b.AdminKey != "":
		fmt.Fprintf(w, `
A new admin key was created (shown only now; it is stored hashed). Register a dataset:
  export DPKIT_URL=%s DPKIT_KEY=%s
  dpkit admin dataset register --schema schema.json --csv data.csv
then create an analyst key with: dpkit admin key create --name alice --dataset NAME
(see docs/service.md).
`, b.URL, b.AdminKey)
	default:
		fmt.Fprintf(w, "\nUse the keys created earlier; see docs/service.md for the API and dpkit admin.\n")
	}
	fmt.Fprintf(w, "Stop with Ctrl-C.\n")
}
