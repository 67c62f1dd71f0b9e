package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/dpkit/dpkit/internal/server"
)

const serveUsage = `Usage: dpkit serve [--addr HOST:PORT] [--db PATH|postgres://…] [--demo]

Run the dpkit query service: analysts send aggregate SQL queries over registered
datasets and get noisy answers with their accuracy; every answer is charged to the
dataset's privacy budget in the ledger, and recorded, before it is returned. Queries
that would exceed a budget are refused. The web page is at the printed URL.

Flags:
  --addr HOST:PORT  address to listen on (default 127.0.0.1:8080; port 0 picks a free one)
  --db PATH|URL     the database of the ledger, datasets and API keys: a SQLite file
                    (default dpkit.db, created if missing) or a postgres:// URL
                    (tables in the first schema of its search_path; several
                    servers may share one PostgreSQL database)
  --demo            register the lecture slides' "flu" and "salary" tables (budget ε = 1,
                    δ = 1e-6, fixed policy, at most 20 queries each) if missing, and
                    mint a new admin key and a new analyst key
  --max-body BYTES  largest request body accepted (default 1048576)
  -h, --help        show this help

The first line of standard output is one JSON object:
  {"admin_key":…,"analyst_key":…,"url":…}
with the keys minted by this start ("analyst_key" with --demo only; "admin_key" with
--demo, or when the database has no admin key yet). Keys are stored hashed: they are
printed once, and keys from earlier starts stay valid. Human-readable help follows.
Restarting with the same --db keeps datasets, keys and budgets.

The service stops gracefully on SIGINT or SIGTERM. See docs/service.md for the API.

Exit status: 0 stopped by a signal; 1 the database or the address cannot be used;
2 usage error.

Examples:
  dpkit serve --demo
  dpkit serve --addr 0.0.0.0:8443 --db /var/lib/dpkit/ledger.db
  dpkit serve --db 'postgres://dpkit@db.internal/dpkit?search_path=dpkit'
`

// serveCommand is "dpkit serve".
type serveCommand struct {
	stdout, stderr io.Writer

	addr    string
	db      string
	demo    bool
	maxBody int64
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
	flags.Int64Var(&c.maxBody, "max-body", server.DefaultMaxBody, "")
	withUsage(cmd, serveUsage)
	return cmd
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
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	if c.maxBody < 1 {
		return usagef("invalid --max-body %d: want a positive number of bytes", c.maxBody)
	}
	if _, _, err := net.SplitHostPort(c.addr); err != nil {
		return usagef("invalid --addr %q: want HOST:PORT, e.g. 127.0.0.1:8080", c.addr)
	}
	if strings.TrimSpace(c.db) == "" {
		return usagef("invalid --db \"\": want a file path or a postgres:// URL")
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM)
	defer stop()

	srv, closeDB, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer closeDB()

	var banner serveBanner
	if c.demo {
		keys, err := srv.SetUpDemo(ctx)
		if err != nil {
			return err
		}
		banner.AdminKey, banner.AnalystKey = keys.AdminKey, keys.AnalystKey
	} else if banner.AdminKey, err = srv.Bootstrap(ctx); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", c.addr, err)
	}
	banner.URL = "http://" + ln.Addr().String()
	if err := writeJSON(c.stdout, banner); err != nil {
		ln.Close()
		return err
	}
	c.printHelp(banner)
	if err := srv.Serve(ctx, ln); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// open opens the database with one connection pool for the ledger and the service's
// registry (server.Open).
func (c *serveCommand) open(ctx context.Context) (*server.Server, func(), error) {
	return server.Open(ctx, c.db, server.Options{
		MaxBody:  c.maxBody,
		ErrorLog: log.New(c.stderr, "dpkit serve: ", log.LstdFlags),
	})
}

// printHelp prints what to do next, with a curl command ready to paste.
func (c *serveCommand) printHelp(b serveBanner) {
	w := c.stdout
	fmt.Fprintf(w, "\ndpkit query service listening on %s (web page: %s/)\n", b.URL, b.URL)
	switch {
	case c.demo:
		fmt.Fprintf(w, `
Demo datasets: flu (name, flu in {0,1}) and salary (name, salary in [10000, 100000]),
each with budget epsilon = 1, delta = 1e-6, at most 20 queries (fixed policy).

Ask a question as the analyst:
  curl -s -H 'Authorization: Bearer %s' \
    -d '{"sql":"SELECT COUNT(*) FROM flu WHERE flu = 1"}' %s/v1/datasets/flu/query

See what is left:
  curl -s -H 'Authorization: Bearer %s' %s/v1/datasets/flu/budget

Open %s/ in a browser and paste a key to see budgets, the privacy curve and releases.
The keys are shown only now (they are stored hashed); each --demo start mints new ones.
`, b.AnalystKey, b.URL, b.AnalystKey, b.URL, b.URL)
	case b.AdminKey != "":
		fmt.Fprintf(w, `
A new admin key was created (shown only now; it is stored hashed). Register a dataset:
  curl -s -H 'Authorization: Bearer %s' -d @dataset.json %s/v1/datasets
then create an analyst key with POST %s/v1/keys (see docs/service.md).
`, b.AdminKey, b.URL, b.URL)
	default:
		fmt.Fprintf(w, "\nUse the keys created earlier; see docs/service.md for the API.\n")
	}
	fmt.Fprintf(w, "Stop with Ctrl-C.\n")
}
