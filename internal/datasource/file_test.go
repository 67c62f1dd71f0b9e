package datasource

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dpkit/dpkit"
)

// TestOpenFile: a regular file (or a link to one) within the limits is read; anything
// else is a *dpkit.ParamError for "path" saying why, at once — also for a named pipe
// without a writer, on which a plain open would block.
func TestOpenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := write("ok.csv", "x\n1\n2\n")
	link := filepath.Join(dir, "link.csv")
	if err := os.Symlink(ok, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{ok, link} {
		f, err := OpenFile(p, Limits{})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		b, err := io.ReadAll(f)
		f.Close()
		if err != nil || string(b) != "x\n1\n2\n" {
			t.Fatalf("%s: read %q, %v", p, b, err)
		}
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	toZero := filepath.Join(dir, "zero.csv")
	if err := os.Symlink("/dev/zero", toZero); err != nil {
		t.Fatal(err)
	}
	big := write("big.csv", strings.Repeat("1\n", 600))
	for _, tc := range []struct {
		name, path, want string
		limits           Limits
	}{
		{"directory", dir, "a directory", Limits{}},
		{"root", "/", "a directory", Limits{}},
		{"device", "/dev/zero", "a device", Limits{}},
		{"link to a device", toZero, "a device", Limits{}},
		{"named pipe", fifo, "named pipe", Limits{}},
		{"socket", sock, "a socket", Limits{}},
		{"missing", filepath.Join(dir, "none.csv"), "does not exist", Limits{}},
		{"too large", big, "1200 bytes, more than the limit of 1000", Limits{MaxFileBytes: 1000}},
		{"empty path", "", "missing path", Limits{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				f, err := OpenFile(tc.path, tc.limits)
				if err == nil {
					f.Close()
				}
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("OpenFile blocked")
			}
			var pe *dpkit.ParamError
			if !errors.As(err, &pe) || pe.Name != "path" || pe.Pkg != "datasource" || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want a ParamError for path saying %q", err, tc.want)
			}
		})
	}
}

// TestOpenFileReadLimits: a line longer than MaxLineBytes, and a file that grows beyond
// MaxFileBytes after it was opened, fail the read with a ParamError naming the line or
// the limit; a line of exactly MaxLineBytes is read.
func TestOpenFileReadLimits(t *testing.T) {
	dir := t.TempDir()
	read := func(text string, limits Limits, grow string) error {
		p := filepath.Join(dir, "f.csv")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := OpenFile(p, limits)
		if err != nil {
			return err
		}
		defer f.Close()
		if grow != "" {
			g, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			g.WriteString(grow)
			g.Close()
		}
		_, err = io.ReadAll(f)
		return err
	}
	line := strings.Repeat("a", 100)
	if err := read("x\n"+line+"\n"+line, Limits{MaxLineBytes: 100}, ""); err != nil {
		t.Fatalf("lines of exactly the limit: %v", err)
	}
	err := read("x\n"+line+"\n"+line+"a\n", Limits{MaxLineBytes: 100}, "")
	if err == nil || !strings.Contains(err.Error(), "line 3 is longer") {
		t.Fatalf("a long line: %v", err)
	}
	// A huge single line (as /dev/zero or a one-line file would be) stops at the limit.
	if err := read(strings.Repeat("0", 1<<20), Limits{MaxLineBytes: 4096}, ""); err == nil || !strings.Contains(err.Error(), "line 1 is longer") {
		t.Fatalf("one long line: %v", err)
	}
	if err := read("x\n1\n", Limits{MaxFileBytes: 4}, strings.Repeat("2\n", 100)); err == nil || !strings.Contains(err.Error(), "grew beyond") {
		t.Fatalf("a growing file: %v", err)
	}
}
