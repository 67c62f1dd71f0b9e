package server

import (
	"database/sql"
	"errors"
)

// openPostgres opens a PostgreSQL database for the Store.
//
// database/sql access to PostgreSQL goes through pgx's stdlib package, which needs
// github.com/jackc/puddle/v2 — a module go.sum does not list yet. Until it does, the
// service runs on SQLite only.
func openPostgres(dsn string) (*sql.DB, error) {
	return nil, errors.New("PostgreSQL is not available in this build (pgx/v5/stdlib needs github.com/jackc/puddle/v2 in go.sum); use a SQLite file")
}
