package server

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/dpkit/dpkit"
)

// Handlers stay thin: authenticate, decode, call the service (datasets.go, answer.go,
// keys.go) or the ledger, encode. Every error goes through writeError (one JSON shape).

// authAdmin authenticates r and requires an admin key (403 otherwise).
func (s *Server) authAdmin(r *http.Request) (principal, error) {
	p, err := s.authenticate(r)
	if err == nil && !p.admin() {
		err = errAdminOnly
	}
	return p, err
}

// adminBody authenticates r as an admin's request and decodes its JSON body into v.
func (s *Server) adminBody(w http.ResponseWriter, r *http.Request, v any) (principal, error) {
	p, err := s.authAdmin(r)
	if err != nil {
		return p, err
	}
	return p, s.decode(w, r, v)
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

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	if err := s.reg.Ping(r.Context()); err != nil {
		return errorf(http.StatusServiceUnavailable, "database unavailable")
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

func (s *Server) whoami(w http.ResponseWriter, r *http.Request) error {
	p, err := s.authenticate(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": p.ID, "name": p.Name, "role": p.Role})
	return nil
}

func (s *Server) listDatasets(w http.ResponseWriter, r *http.Request) error {
	p, err := s.authenticate(r)
	if err != nil {
		return err
	}
	out, err := s.Datasets(r.Context(), p)
	if err != nil {
		return err
	}
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
	if _, err := s.adminBody(w, r, &req); err != nil {
		return err
	}
	info, err := s.Register(r.Context(), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, info)
	return nil
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

func (s *Server) budget(w http.ResponseWriter, r *http.Request) error {
	_, d, err := s.authDataset(r)
	if err != nil {
		return err
	}
	st, err := s.ledger.Status(r.Context(), d.spec.Name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, BudgetResponse{Total: st.Total, Spent: st.Spent, Releases: st.Releases, Policy: st.Policy, RemainingQueries: st.Remaining, PerQuery: st.PerQuery})
	return nil
}

func (s *Server) releases(w http.ResponseWriter, r *http.Request) error {
	p, d, err := s.authDataset(r)
	if err != nil {
		return err
	}
	page, err := releasesPage(p, r.URL.Query())
	if err != nil {
		return err
	}
	out, next, err := s.Releases(r.Context(), d, page)
	if err != nil {
		return err
	}
	resp := ReleasesResponse{Releases: out}
	if next > 0 {
		c := strconv.FormatInt(next, 10)
		resp.NextCursor = &c
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// releasesPage reads the parameters of GET …/releases: limit (1 to MaxPage, default
// 100), cursor (the next_cursor of the previous page), and, for admins, analyst (a key
// id). Analysts see their own releases only.
func releasesPage(p principal, v url.Values) (Page, error) {
	page := Page{Limit: 100}
	for name := range v {
		if name != "limit" && name != "cursor" && name != "analyst" {
			return page, &dpkit.ParamError{Pkg: "server", Name: name, Value: v.Get(name), Want: "one of the parameters limit, cursor, analyst"}
		}
	}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > MaxPage {
			return page, &dpkit.ParamError{Pkg: "server", Name: "limit", Value: l, Want: fmt.Sprintf("an integer in [1, %d]", MaxPage)}
		}
		page.Limit = n
	}
	if c := v.Get("cursor"); c != "" {
		n, err := strconv.ParseInt(c, 10, 64)
		if err != nil || n < 0 {
			return page, &dpkit.ParamError{Pkg: "server", Name: "cursor", Value: c, Want: "the next_cursor of a previous page"}
		}
		page.After = n
	}
	page.Analyst = v.Get("analyst")
	switch {
	case !p.admin() && page.Analyst != "" && page.Analyst != p.ID:
		return page, errorf(http.StatusForbidden, "an analyst key sees its own releases only")
	case !p.admin():
		page.Analyst = p.ID
	}
	return page, nil
}

func (s *Server) curve(w http.ResponseWriter, r *http.Request) error {
	_, d, err := s.authDataset(r)
	if err != nil {
		return err
	}
	st, err := s.ledger.Status(r.Context(), d.spec.Name)
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
	var req GrantRequest
	if on && r.ContentLength != 0 { // the body is optional
		if err := s.decode(w, r, &req); err != nil {
			return err
		}
	}
	if err := s.SetGrant(r.Context(), p, r.PathValue("name"), r.PathValue("key"), on, req.Budget); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.authAdmin(r); err != nil {
		return err
	}
	keys, err := s.Keys(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"keys": keys})
	return nil
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request) error {
	var req CreateKeyRequest
	if _, err := s.adminBody(w, r, &req); err != nil {
		return err
	}
	resp, err := s.NewKey(r.Context(), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, resp)
	return nil
}

func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request) error {
	p, err := s.authAdmin(r)
	if err != nil {
		return err
	}
	if err := s.RevokeKey(r.Context(), p, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
