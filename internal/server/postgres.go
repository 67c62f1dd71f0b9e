package server

import (
	"database/sql"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// openPostgres opens the PostgreSQL database at url for the Store, through pgx's
// database/sql driver. Like the ledger (package ledger/postgres), the tables live in the
// first schema of the URL's search_path, and commits are synchronous.
func openPostgres(url string) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("not a PostgreSQL URL postgres://user@host:port/database?…: %v", redactErr(err, url))
	}
	cfg.RuntimeParams["synchronous_commit"] = "on"
	if cfg.RuntimeParams["application_name"] == "" {
		cfg.RuntimeParams["application_name"] = "dpkit-serve"
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	return db, nil
}

// redactErr returns err's message with the URL's password hidden.
func redactErr(err error, url string) string {
	msg := err.Error()
	if r := redact(url); r != url {
		msg = strings.ReplaceAll(msg, url, r)
	}
	return msg
}
