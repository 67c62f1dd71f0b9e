package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"

	"github.com/dpkit/dpkit/beam/dpbeam"
)

func TestMain(m *testing.M) {
	beamlog.LogLevel = "warn"
	beam.Init()
	os.Exit(m.Run())
}

// TestExample runs the README's local command (with 20 000 synthetic visits, a ledger
// and an output in a temporary directory) and then the same job again, which the
// ledger refuses.
func TestExample(t *testing.T) {
	dir := t.TempDir()
	*rows = 20000
	*ledgerPath = filepath.Join(dir, "ledger.db")
	*output = filepath.Join(dir, "out")
	if err := run(context.Background()); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(*output + "*")
	var lines []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Fields(strings.ReplaceAll(string(b), " ", "_"))...)
	}
	// 20 000 visits over 14 days: about 2000 users per day, so every day is released
	// (partition selection keeps a day of more than ~60 users with certainty).
	if len(lines) != 14 {
		t.Errorf("%d output lines, want 14 (one per day): %q", len(lines), lines)
	}
	re := regexp.MustCompile(`^day=\d+_visits=-?\d+_mean_minutes=\d+\.\d$`)
	for _, l := range lines {
		if !re.MatchString(l) {
			t.Errorf("line %q", l)
		}
	}
	if err := run(context.Background()); !errors.Is(err, dpbeam.ErrRerun) {
		t.Errorf("second run: %v, want ErrRerun", err)
	}
}
