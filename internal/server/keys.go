package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/registry"
)

// API keys and grants: what the admin routes do.

// CreateKey makes a new key with the given role and name, grants it datasets, and returns
// its record and secret (shown once).
func (s *Server) CreateKey(ctx context.Context, name string, role Role, datasets []string) (registry.KeyRecord, string, error) {
	return s.mintKey(ctx, name, role, datasets, false)
}

func (s *Server) mintKey(ctx context.Context, name string, role Role, datasets []string, demo bool) (registry.KeyRecord, string, error) {
	k := registry.KeyRecord{ID: newKeyID(), Name: name, Role: role, Created: time.Now().UTC(), Demo: demo}
	secret := newSecret()
	if err := s.reg.AddKey(ctx, k, hashKey(secret)); err != nil {
		return registry.KeyRecord{}, "", err
	}
	for _, d := range datasets {
		if err := s.reg.Grant(ctx, k.ID, d); err != nil {
			return registry.KeyRecord{}, "", err
		}
	}
	return k, secret, nil
}

// NewKey validates req and makes the key it asks for.
func (s *Server) NewKey(ctx context.Context, req CreateKeyRequest) (*CreateKeyResponse, error) {
	if req.Role != Admin && req.Role != Analyst {
		return nil, &dpkit.ParamError{Pkg: "server", Name: "role", Value: string(req.Role), Want: `"admin" or "analyst"`}
	}
	if strings.TrimSpace(req.Name) == "" || len(req.Name) > 100 {
		return nil, &dpkit.ParamError{Pkg: "server", Name: "name", Value: req.Name, Want: "a non-empty name of at most 100 bytes"}
	}
	for i, name := range req.Datasets {
		if _, err := s.dataset(ctx, name); err != nil {
			return nil, &dpkit.ParamError{Pkg: "server", Name: fmt.Sprintf("datasets[%d]", i), Value: name, Want: "a registered dataset"}
		}
	}
	k, secret, err := s.CreateKey(ctx, req.Name, req.Role, req.Datasets)
	if err != nil {
		return nil, err
	}
	ds := req.Datasets
	if ds == nil {
		ds = []string{}
	}
	info := keyInfo(k)
	info.Datasets = ds
	return &CreateKeyResponse{KeyInfo: info, Key: secret}, nil
}

// keyInfo is what the API shows of a key.
func keyInfo(k registry.KeyRecord) KeyInfo {
	return KeyInfo{ID: k.ID, Name: k.Name, Role: k.Role, Created: k.Created, Revoked: k.Revoked, Demo: k.Demo, Datasets: []string{}}
}

// Keys lists every key (never a secret), revoked ones included, by creation time, each
// with the datasets granted to it.
func (s *Server) Keys(ctx context.Context) ([]KeyInfo, error) {
	keys, err := s.reg.Keys(ctx)
	if err != nil {
		return nil, err
	}
	grants, err := s.reg.AllGrants(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]KeyInfo, len(keys))
	for i, k := range keys {
		out[i] = keyInfo(k)
		out[i].Datasets = grants[k.ID]
		if out[i].Datasets == nil {
			out[i].Datasets = []string{}
		}
	}
	return out, nil
}

// RevokeKey revokes key id on behalf of admin p (a key cannot revoke itself).
func (s *Server) RevokeKey(ctx context.Context, p principal, id string) error {
	if id == p.ID {
		return errorf(http.StatusConflict, "a key cannot revoke itself")
	}
	if err := s.reg.RevokeKey(ctx, id); err != nil {
		return err
	}
	s.forgetKeys()
	return nil
}

// SetGrant lets key id query the dataset name (on), or takes that back, on behalf of
// admin p. A budget (on only) gives the key a budget of its own within the dataset's: a
// ledger sub-budget, which each of its releases must fit as well as the dataset's;
// it is immutable (granting another one is a conflict) and outlives a revocation.
func (s *Server) SetGrant(ctx context.Context, p principal, name, id string, on bool, budget *dpkit.Budget) error {
	d, err := s.lookup(ctx, p, name)
	if err != nil {
		return err
	}
	valid, err := s.reg.KeyValid(ctx, id)
	if err != nil {
		return err
	}
	if !valid {
		return errorf(http.StatusNotFound, "key %q not found", id)
	}
	if !on {
		return s.reg.Revoke(ctx, id, d.spec.Name)
	}
	if budget != nil {
		if err := checkGrantBudget(*budget, *d.spec.Policy); err != nil {
			return err
		}
		if err := s.ledger.GrantBudget(ctx, d.spec.Name, id, *budget); err != nil {
			return err
		}
	}
	return s.reg.Grant(ctx, id, d.spec.Name)
}

// checkGrantBudget checks an analyst's budget (the grant's "budget").
func checkGrantBudget(b dpkit.Budget, pol PolicySpec) error {
	if err := dpkit.CheckPositive("budget.epsilon", b.Epsilon); err != nil {
		return dpkit.InPackage("server", err)
	}
	if err := dpkit.CheckDelta("budget.delta", b.Delta); err != nil {
		return dpkit.InPackage("server", err)
	}
	if pol.gaussian() && b.Delta == 0 {
		return &dpkit.ParamError{Pkg: "server", Name: "budget.delta", Value: 0.0, Want: "> 0: the dataset's releases are Gaussian (the analyst's budget is a Gaussian filter)"}
	}
	return nil
}
