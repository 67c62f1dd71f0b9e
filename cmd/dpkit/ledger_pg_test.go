package main

import (
	"testing"

	"github.com/dpkit/dpkit/internal/pgtest"
)

// postgresSchemaURL creates a fresh schema in the test server at admin and returns a URL
// selecting it (see package pgtest).
func postgresSchemaURL(t *testing.T, admin string) string {
	return pgtest.SchemaIn(t, admin, "dpkit_cli_")
}
