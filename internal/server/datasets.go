package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/datasource"
	"github.com/dpkit/dpkit/internal/registry"
)

// The datasets a Server knows: registered in the registry (by this process or another
// sharing the database), cached here with their loaded tables.

// lookup returns the dataset name as the caller may see it: admins see every dataset,
// analysts only those granted to them (others are "not found", so that their existence
// does not leak).
func (s *Server) lookup(ctx context.Context, p principal, name string) (*dataset, error) {
	d, err := s.dataset(ctx, name)
	if err != nil {
		return nil, err
	}
	if !p.admin() {
		ok, err := s.reg.Granted(ctx, p.ID, d.spec.Name)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, notFound(name)
		}
	}
	return d, nil
}

// dataset returns the registered dataset called name, reading the store if this
// process has not seen it (another process sharing the database may have added it).
func (s *Server) dataset(ctx context.Context, name string) (*dataset, error) {
	s.mu.Lock()
	d, ok := s.data[name]
	s.mu.Unlock()
	if ok {
		return d, nil
	}
	if err := s.loadDatasets(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	d, ok = s.data[name]
	s.mu.Unlock()
	if !ok {
		return nil, notFound(name)
	}
	return d, nil
}

// loadDatasets reads every dataset record of the store into the registry (tables are
// loaded lazily).
func (s *Server) loadDatasets(ctx context.Context) error {
	recs, err := s.reg.Datasets(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rec := range recs {
		if _, ok := s.data[rec.Name]; ok {
			continue
		}
		var spec DatasetSpec
		if err := json.Unmarshal(rec.Spec, &spec); err != nil {
			return fmt.Errorf("dataset %q: stored spec: %w", rec.Name, err)
		}
		schema, err := spec.validate()
		if err != nil {
			return fmt.Errorf("dataset %q: stored spec: %w", rec.Name, err)
		}
		s.data[rec.Name] = &dataset{spec: spec, rec: rec, schema: schema}
	}
	return nil
}

// table returns the loaded table of d, loading it on first use (from its file, or from
// the CSV text in the registry). A failed load is not remembered: the next query tries
// again (the file or the database may be back). Its cause is logged, not shown: the
// caller may be an analyst, who does not see where the data live.
func (s *Server) table(ctx context.Context, d *dataset) (Table, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.table != nil {
		return d.table, nil
	}
	t, err := s.load(ctx, d)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		s.logf("dataset %q: loading its data: %v", d.spec.Name, err)
		return nil, errorf(http.StatusServiceUnavailable, "dataset %q is unavailable: its data cannot be loaded now (the server's log says why)", d.spec.Name)
	}
	d.table = t
	return t, nil
}

// load reads d's table (a live table: opens it).
func (s *Server) load(ctx context.Context, d *dataset) (Table, error) {
	if d.rec.LiveURL != "" {
		return s.openLive(ctx, d.spec.Name, datasource.Table{URL: d.rec.LiveURL, Name: d.rec.LiveTable}, d.schema)
	}
	var r io.Reader
	if d.rec.Path != "" {
		f, err := datasource.OpenFile(d.rec.Path, s.opts.FileLimits)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	} else {
		text, err := s.reg.DatasetCSV(ctx, d.spec.Name)
		if err != nil {
			return nil, err
		}
		r = strings.NewReader(text)
	}
	return s.engine.Load(d.schema, r)
}

// Datasets returns the datasets p may see, by name: every dataset for an admin, the
// granted ones for an analyst.
func (s *Server) Datasets(ctx context.Context, p principal) ([]DatasetInfo, error) {
	if err := s.loadDatasets(ctx); err != nil {
		return nil, err
	}
	var granted map[string]bool
	if !p.admin() {
		var err error
		if granted, err = s.reg.Grants(ctx, p.ID); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []DatasetInfo{}
	for _, name := range sortedKeys(s.data) {
		d := s.data[name]
		if p.admin() || granted[name] {
			out = append(out, d.spec.info(d.rec, p.admin()))
		}
	}
	return out, nil
}

// Register validates and registers a dataset: it loads the data (so that malformed CSV
// is reported now; a PostgreSQL table is read into a snapshot, see datasource.Snapshot),
// creates the dataset's budget in the ledger, and records the dataset. A dataset name is
// never reused: registering an existing name fails with ErrExists, so a budget can never
// be reset by registering its dataset again.
func (s *Server) Register(ctx context.Context, req CreateDatasetRequest) (DatasetInfo, error) {
	return s.register(ctx, req, false)
}

func (s *Server) register(ctx context.Context, req CreateDatasetRequest, demo bool) (DatasetInfo, error) {
	spec := req.DatasetSpec
	schema, err := spec.validate()
	if err != nil {
		return DatasetInfo{}, err
	}
	rec := registry.DatasetRecord{Name: spec.Name, CSV: req.CSV, Path: req.Path, Created: time.Now().UTC(), Demo: demo}
	var table Table
	switch {
	case countSet(req.CSV != "", req.Path != "", req.Table != nil) != 1:
		return DatasetInfo{}, &dpkit.ParamError{Pkg: "server", Name: "csv", Value: "", Want: `exactly one of "csv" (CSV text), "path" (a CSV file on the server) and "table" (a PostgreSQL table)`}
	case req.Path != "":
		f, err := datasource.OpenFile(req.Path, s.opts.FileLimits)
		if err != nil {
			return DatasetInfo{}, err
		}
		table, err = s.engine.Load(schema, f)
		f.Close()
		if err != nil {
			return DatasetInfo{}, err
		}
	case req.Table != nil && checkMode(req.Table) != nil:
		return DatasetInfo{}, checkMode(req.Table)
	case req.Table != nil && req.Table.Mode == datasource.ModeLive:
		// Not copied: every query runs inside the table's database.
		lt, err := s.openLive(ctx, spec.Name, *req.Table, schema)
		if err != nil {
			return DatasetInfo{}, err
		}
		rec.LiveURL, rec.LiveTable, rec.Origin = req.Table.URL, req.Table.Name, lt.t.Origin()
		table = lt
	default:
		if req.Table != nil {
			// A snapshot, stored and loaded as CSV text like "csv".
			if rec.CSV, rec.Origin, err = datasource.Snapshot(ctx, *req.Table, schema); err != nil {
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
	if err := s.record(ctx, spec, rec); err != nil {
		if lt, ok := table.(*liveTable); ok {
			s.dropLive(lt)
		}
		return DatasetInfo{}, err
	}
	rec.CSV = "" // loaded already; the registry keeps it
	d := &dataset{spec: spec, rec: rec, schema: schema, table: table}
	s.mu.Lock()
	s.data[spec.Name] = d
	s.mu.Unlock()
	return spec.info(rec, true), nil
}

// record creates the budget of a new dataset in the ledger, then records the dataset in
// the registry.
func (s *Server) record(ctx context.Context, spec DatasetSpec, rec registry.DatasetRecord) error {
	s.created.Lock()
	defer s.created.Unlock()
	if _, err := s.dataset(ctx, spec.Name); err == nil {
		return fmt.Errorf("dataset %q: %w", spec.Name, ErrExists)
	}
	if err := s.ledger.Create(ctx, spec.Name, *spec.Budget, *spec.Policy); err != nil {
		if !errors.Is(err, ErrExists) {
			return err
		}
		// A budget without a dataset: a registration interrupted between the two steps
		// (or a name taken by another process in between). Adopt it only if it is the
		// same budget and nothing was spent from it.
		st, serr := s.ledger.Status(ctx, spec.Name)
		if serr != nil || st.Releases != 0 || st.Total != *spec.Budget || st.Policy.Mode != spec.Policy.Mode || st.Policy.MaxQueries != spec.Policy.MaxQueries ||
			st.Policy.Mechanism != spec.Policy.Mechanism || st.Policy.Pure != spec.Policy.Pure {
			return fmt.Errorf("dataset %q: a ledger budget of that name exists: %w", spec.Name, ErrExists)
		}
	}
	return s.reg.AddDataset(ctx, rec)
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
