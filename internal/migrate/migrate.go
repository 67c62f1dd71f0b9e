package migrate

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migration is one versioned migration file.
type Migration struct {
	Version int    // the number before "_" in the file name, from 1
	Name    string // the file's base name, e.g. "001_init.sql"
	SQL     string // the file's text
}

// List is a set of migrations ordered by version: List[i].Version == i+1.
type List []Migration

// Load reads the migrations whose paths match pattern in fsys (e.g. "migrations/*.sql"),
// ordered by version. Every name must start with a version number followed by "_", and
// the versions must be exactly 1, 2, …, n: a gap or a repeat is an error, so that the
// schema version of a database is the number of migrations applied to it.
func Load(fsys fs.FS, pattern string) (List, error) {
	names, err := fs.Glob(fsys, pattern)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	l := make(List, 0, len(names))
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v < 1 {
			return nil, fmt.Errorf("migrate: migration %s: the name must start with a version number ≥ 1 and \"_\"", base)
		}
		text, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("migrate: %w", err)
		}
		l = append(l, Migration{Version: v, Name: base, SQL: string(text)})
	}
	sort.SliceStable(l, func(i, j int) bool { return l[i].Version < l[j].Version })
	for i, m := range l {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migrate: migration %s has version %d, want %d (versions are 1, 2, … without gaps or repeats)", m.Name, m.Version, i+1)
		}
	}
	return l, nil
}

// MustLoad is Load for migrations embedded in the binary: it panics if they are
// malformed, a defect of the build that every test of the embedding package reveals
// (like regexp.MustCompile), never a consequence of input.
func MustLoad(fsys fs.FS, pattern string) List {
	l, err := Load(fsys, pattern)
	if err != nil {
		panic(err)
	}
	return l
}

// Latest returns the schema version the list brings a database to: its highest version,
// 0 for an empty list.
func (l List) Latest() int { return len(l) }

// Apply calls step on each migration above version current, in order, and stops at the
// first error, which it returns as "migration NNN_name.sql: …" (wrapped). A current
// version above Latest applies nothing: whether a database migrated by a newer program is
// acceptable is the caller's decision.
func (l List) Apply(current int, step func(Migration) error) error {
	for _, m := range l {
		if m.Version <= current {
			continue
		}
		if err := step(m); err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
	}
	return nil
}

// Statements splits the migration into its statements, for drivers that run one
// statement per call: "--" comments are removed and the text is cut at every ";".
// Migrations must therefore have neither "--" nor ";" inside a string literal.
func (m Migration) Statements() []string {
	var b strings.Builder
	for _, line := range strings.Split(m.SQL, "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line + "\n")
	}
	var out []string
	for _, stmt := range strings.Split(b.String(), ";") {
		if strings.TrimSpace(stmt) != "" {
			out = append(out, stmt)
		}
	}
	return out
}
