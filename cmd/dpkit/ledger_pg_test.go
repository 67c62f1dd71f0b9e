package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
)

// postgresSchemaURL creates a fresh schema in the test server at admin and returns a URL
// selecting it; the schema is dropped when the test ends.
func postgresSchemaURL(t *testing.T, admin string) string {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("PostgreSQL at DPKIT_TEST_POSTGRES is unreachable: %v", err)
	}
	defer c.Close(ctx)
	b := make([]byte, 6)
	rand.Read(b)
	schema := "dpkit_cli_" + hex.EncodeToString(b)
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
