package sqldb

import (
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

func files(names ...string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for _, n := range names {
		fsys["m/"+n] = &fstest.MapFile{Data: []byte("-- " + n + "\nCREATE TABLE t (x INT);")}
	}
	return fsys
}

func TestLoad(t *testing.T) {
	// Versions are numbers, not text: 10 comes after 9 although "010" < "9_" as text.
	l, err := Load(files("002_b.sql", "001_a.sql", "3_c.sql", "04_d.sql", "005_e.sql", "006_f.sql", "007_g.sql", "008_h.sql", "9_i.sql", "010_j.sql", "notes.txt"), "m/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i, m := range l {
		if m.Version != i+1 {
			t.Fatalf("migration %d has version %d", i, m.Version)
		}
		names = append(names, m.Name)
	}
	want := []string{"001_a.sql", "002_b.sql", "3_c.sql", "04_d.sql", "005_e.sql", "006_f.sql", "007_g.sql", "008_h.sql", "9_i.sql", "010_j.sql"}
	if !reflect.DeepEqual(names, want) || l.Latest() != 10 {
		t.Fatalf("names %v (latest %d), want %v (latest 10)", names, l.Latest(), want)
	}
	if !strings.HasPrefix(l[0].SQL, "-- 001_a.sql\nCREATE TABLE") {
		t.Fatalf("SQL %q", l[0].SQL)
	}
	if l, err := Load(files(), "m/*.sql"); err != nil || len(l) != 0 || l.Latest() != 0 {
		t.Fatalf("no files: %v %v", l, err)
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string
		want  string
	}{
		{"gap", []string{"001_a.sql", "003_c.sql"}, "has version 3, want 2"},
		{"repeat", []string{"001_a.sql", "001_b.sql"}, "want 2"},
		{"starts at 2", []string{"002_a.sql"}, "want 1"},
		{"no number", []string{"init.sql"}, "must start with a version number"},
		{"no underscore", []string{"001.sql"}, "must start with a version number"},
		{"zero", []string{"000_a.sql"}, "must start with a version number"},
		{"negative", []string{"-1_a.sql"}, "must start with a version number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Load(files(tc.files...), "m/*.sql")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load(%v) = %v, %v; want an error containing %q", tc.files, l, err, tc.want)
			}
		})
	}
	if _, err := Load(files(), "m/[.sql"); err == nil {
		t.Fatal("a malformed pattern was accepted")
	}
}

func TestMustLoadPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("MustLoad of a set with a gap did not panic")
		}
	}()
	MustLoad(files("001_a.sql", "003_c.sql"), "m/*.sql")
}
