package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/dpkit/dpkit/internal/registry"
)

// API keys are "dpk_" followed by 32 random bytes (base64url, 43 characters). The store
// keeps only their SHA-256 (hex), so a stolen database does not give working keys;
// a 256-bit random key needs no salt or slow hash. Each key also has a public id
// ("k_" + 8 random bytes in hex) used in grants, the audit log and revocation.

const keyPrefix = "dpk_"

// newSecret returns a new random API key.
func newSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand, Go ≥ 1.24)
	return keyPrefix + base64.RawURLEncoding.EncodeToString(b)
}

func newKeyID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "k_" + hex.EncodeToString(b)
}

// hashKey returns the stored form of a secret key.
func hashKey(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// principal is the authenticated caller.
type principal struct {
	registry.KeyRecord
}

func (p principal) admin() bool { return p.Role == Admin }

// keyCache remembers valid keys by hash so that a query does not read the key table.
// Revocation through the API clears it; a key revoked by another server process sharing
// a PostgreSQL database stops working within keyCacheTTL.
type keyCache struct {
	mu sync.Mutex
	m  map[string]cachedKey
}

type cachedKey struct {
	k     registry.KeyRecord
	until time.Time
}

const keyCacheTTL = 30 * time.Second

// authenticate returns the caller of r, or errUnauthorized.
func (s *Server) authenticate(r *http.Request) (principal, error) {
	h := r.Header.Get("Authorization")
	scheme, secret, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return principal{}, errUnauthorized
	}
	return s.authenticateKey(r.Context(), strings.TrimSpace(secret))
}

// authenticateKey returns the caller whose secret key is secret, or errUnauthorized.
func (s *Server) authenticateKey(ctx context.Context, secret string) (principal, error) {
	if !strings.HasPrefix(secret, keyPrefix) || len(secret) > 200 {
		return principal{}, errUnauthorized
	}
	hash := hashKey(secret)
	now := time.Now()
	s.keys.mu.Lock()
	c, hit := s.keys.m[hash]
	s.keys.mu.Unlock()
	if hit && now.Before(c.until) {
		return principal{c.k}, nil
	}
	k, err := s.reg.KeyByHash(ctx, hash)
	if errors.Is(err, registry.ErrNotFound) {
		return principal{}, errUnauthorized
	}
	if err != nil {
		return principal{}, err
	}
	s.keys.mu.Lock()
	if s.keys.m == nil {
		s.keys.m = map[string]cachedKey{}
	}
	s.keys.m[hash] = cachedKey{k: k, until: now.Add(keyCacheTTL)}
	s.keys.mu.Unlock()
	return principal{k}, nil
}

// forgetKeys empties the key cache (after a revocation).
func (s *Server) forgetKeys() {
	s.keys.mu.Lock()
	s.keys.m = nil
	s.keys.mu.Unlock()
}
