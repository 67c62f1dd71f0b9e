package migrate_test

import (
	"fmt"
	"testing/fstest"

	"github.com/dpkit/dpkit/internal/migrate"
)

// A package embeds its migrations (//go:embed migrations/*.sql), loads them once, and
// applies those above the version its database records.
func Example() {
	fsys := fstest.MapFS{
		"migrations/001_init.sql":    {Data: []byte("CREATE TABLE t (x INT);")},
		"migrations/002_add_y.sql":   {Data: []byte("ALTER TABLE t ADD COLUMN y TEXT;")},
		"migrations/003_index_y.sql": {Data: []byte("CREATE INDEX t_y ON t (y);")},
	}
	migrations := migrate.MustLoad(fsys, "migrations/*.sql")
	fmt.Println("schema version", migrations.Latest())

	recorded := 1 // what the database says it has
	_ = migrations.Apply(recorded, func(m migrate.Migration) error {
		fmt.Println("apply", m.Version, m.Name)
		recorded = m.Version // in the migration's transaction
		return nil
	})
	// Output:
	// schema version 3
	// apply 2 002_add_y.sql
	// apply 3 003_index_y.sql
}
