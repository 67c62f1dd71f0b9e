package server

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/datasource"
	"github.com/dpkit/dpkit/noise"
	"github.com/dpkit/dpkit/query"
	"github.com/dpkit/dpkit/query/pushdown"
	"github.com/dpkit/dpkit/sensitivity"
)

// Live tables: a dataset registered with "table": {"url", "name", "mode": "live"} is not
// copied; each query runs inside its PostgreSQL database as one statement in a READ ONLY
// transaction (package query/pushdown), and only the aggregates of each group come back.
// The URL (with its credentials) is kept in the registry to reconnect after a restart;
// admins see the table's origin without credentials.

// liveGrace is how much longer than the statement timeout a live query may take before
// the service gives up waiting (connecting, the catalog check, reading the result).
const liveGrace = 5 * time.Second

// checkMode checks a table source's mode: "snapshot" (or "", the default) or "live".
func checkMode(src *datasource.Table) error {
	switch src.Mode {
	case "", datasource.ModeSnapshot, datasource.ModeLive:
		return nil
	}
	return &dpkit.ParamError{Pkg: "server", Name: "table.mode", Value: src.Mode, Want: `"snapshot" (the default: the table is read once, at registration) or "live" (queried inside its database at every query)`}
}

// openLive opens the live table src of a dataset with the given schema.
func (s *Server) openLive(ctx context.Context, name string, src datasource.Table, schema query.Schema) (*liveTable, error) {
	t, err := pushdown.Open(ctx, pushdown.Source{URL: src.URL, Name: src.Name}, schema,
		pushdown.Options{StatementTimeout: s.opts.StatementTimeout, AppName: "dpkit-serve-live"})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.live = append(s.live, t)
	s.mu.Unlock()
	return &liveTable{s: s, dataset: name, schema: schema, t: t}, nil
}

// closeLive closes the connections of every live table opened.
func (s *Server) closeLive() {
	s.mu.Lock()
	live := s.live
	s.live = nil
	s.mu.Unlock()
	for _, t := range live {
		t.Close()
	}
}

// dropLive closes a live table that no dataset uses (its registration failed).
func (s *Server) dropLive(lt *liveTable) {
	s.mu.Lock()
	s.live = slices.DeleteFunc(s.live, func(t *pushdown.Table) bool { return t == lt.t })
	s.mu.Unlock()
	lt.t.Close()
}

// liveTable is a dataset's live table as the handlers' Table: plans are prepared on the
// declared schema and their exact step runs in the database.
type liveTable struct {
	s       *Server
	dataset string
	schema  query.Schema
	t       *pushdown.Table
}

// Prepare implements Table. A query that cannot run inside the database (MEDIAN,
// QUANTILE) is refused here, before anything is computed.
func (l *liveTable) Prepare(name, sql string) (Prepared, error) {
	p, err := query.PrepareSchema(l.schema, name, sql, sensitivity.AddRemove)
	if err != nil {
		return nil, err
	}
	if _, err := p.Compile(query.SQLTable{Name: []string{name}, Columns: l.t.Columns()}, query.Seed{}); err != nil {
		return nil, err
	}
	return livePlan{queryPlan{p: p, x: l.t}, l}, nil
}

// livePlan is a plan on a live table: its failures are the service's errors.
type livePlan struct {
	queryPlan
	l *liveTable
}

// Release implements Prepared.
func (q livePlan) Release(ctx context.Context, o query.ReleaseOptions, src noise.Source) (Answer, error) {
	a, err := q.queryPlan.Release(ctx, o, src)
	if err != nil {
		return Answer{}, q.l.failure(err)
	}
	return a, nil
}

// failure turns a failure of the live table's database into the service's error, and
// logs its cause (analysts do not see where the data live): 422 for the statement
// timeout, 503 for a database that cannot be reached, refuses the read, or whose table
// no longer matches the declaration. Nothing is charged: the release is recorded only
// after an answer was computed.
func (l *liveTable) failure(err error) error {
	var why string
	switch {
	case errors.Is(err, pushdown.ErrTimeout):
		return errorf(http.StatusUnprocessableEntity, "the query did not finish within the statement timeout of %v on the live table of dataset %q (dpkit serve --statement-timeout): ask for less (a narrower WHERE, fewer groups); nothing was charged",
			l.s.opts.StatementTimeout, l.dataset)
	case errors.Is(err, pushdown.ErrUnavailable):
		why = "its database cannot be reached or could not compute the query now"
	case errors.Is(err, pushdown.ErrPermission):
		why = "its database refused to read the table"
	case errors.Is(err, pushdown.ErrSchemaChanged):
		why = "the table no longer has the declared columns with readable types (a column was dropped or retyped since registration); an admin must restore it or register the table again"
	default:
		return err
	}
	l.s.logf("dataset %q: live table %s: %v", l.dataset, l.t.Origin(), err)
	return errorf(http.StatusServiceUnavailable, "dataset %q is unavailable: %s; nothing was charged (the server's log says why)", l.dataset, why)
}

// queryLimit returns the time limit of a query on d: the statement timeout (and a grace)
// for a live table, else the per-query time limit.
func (s *Server) queryLimit(d *dataset) time.Duration {
	if d.rec.LiveURL != "" && s.opts.StatementTimeout > 0 {
		return s.opts.StatementTimeout + liveGrace
	}
	return s.opts.QueryTimeout
}
