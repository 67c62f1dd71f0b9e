// Package pgtest gives tests a throwaway PostgreSQL schema on the server that
// scripts/test starts: DPKIT_TEST_POSTGRES is the URL of a database in which tests may
// create schemas. Without it tests are skipped, unless DPKIT_REQUIRE_POSTGRES=1, when
// they fail.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// AdminURL returns DPKIT_TEST_POSTGRES, or skips (fails, with DPKIT_REQUIRE_POSTGRES=1)
// the test when it is not set.
func AdminURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("DPKIT_TEST_POSTGRES")
	if u == "" {
		if os.Getenv("DPKIT_REQUIRE_POSTGRES") == "1" {
			t.Fatal("DPKIT_REQUIRE_POSTGRES=1 but DPKIT_TEST_POSTGRES is not set")
		}
		t.Skip("DPKIT_TEST_POSTGRES is not set: skipping the PostgreSQL tests (scripts/test starts a server and sets it)")
	}
	return u
}

// Schema creates a fresh schema, named prefix plus random hex, on the test server and
// returns a URL whose search_path selects it; the schema is dropped when the test ends.
func Schema(t testing.TB, prefix string) string {
	t.Helper()
	return SchemaIn(t, AdminURL(t), prefix)
}

// SchemaIn is Schema on the server at admin.
func SchemaIn(t testing.TB, admin, prefix string) string {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("PostgreSQL at DPKIT_TEST_POSTGRES is unreachable: %v", err)
	}
	defer c.Close(ctx)
	b := make([]byte, 6)
	rand.Read(b)
	schema := prefix + hex.EncodeToString(b)
	if _, err := c.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c, err := pgx.Connect(context.Background(), admin); err == nil {
			c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
			c.Close(context.Background())
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
