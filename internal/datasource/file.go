package datasource

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/dpkit/dpkit"
)

// Limits bound what the service reads from a CSV file on the server. The zero value means
// the defaults.
type Limits struct {
	// MaxFileBytes bounds the file's size; 0 means DefaultMaxFileBytes.
	MaxFileBytes int64
	// MaxLineBytes bounds the length of one line (one CSV record's text); 0 means
	// DefaultMaxLineBytes.
	MaxLineBytes int
}

// The default limits.
const (
	DefaultMaxFileBytes = 1 << 30 // 1 GiB
	DefaultMaxLineBytes = 1 << 20 // 1 MiB
)

func (l Limits) withDefaults() Limits {
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = DefaultMaxFileBytes
	}
	if l.MaxLineBytes <= 0 {
		l.MaxLineBytes = DefaultMaxLineBytes
	}
	return l
}

// OpenFile opens the CSV file at path for reading within limits. Only a regular file (or
// a symbolic link to one) is accepted: a directory, a device (/dev/zero), a named pipe
// or a socket is refused, as is a file larger than MaxFileBytes, with a
// *dpkit.ParamError for "path" saying why — without reading from it, and without
// blocking on a pipe. The returned reader fails (with such an error) at the first line
// longer than MaxLineBytes, and if the file grows beyond MaxFileBytes while it is read.
func OpenFile(path string, limits Limits) (io.ReadCloser, error) {
	limits = limits.withDefaults()
	bad := func(why string) error {
		return &dpkit.ParamError{Pkg: "datasource", Name: "path", Value: path, Want: "a regular CSV file readable by the server, but " + why}
	}
	if path == "" {
		return nil, &dpkit.ParamError{Pkg: "datasource", Name: "path", Value: nil, Want: "the path of a CSV file on the server"}
	}
	before, err := os.Stat(path)
	if err != nil {
		return nil, bad(statReason(err))
	}
	if why := notRegular(before); why != "" {
		return nil, bad(why)
	}
	// O_NONBLOCK: should the path have become a pipe since Stat, opening it does not
	// wait for a writer (for a regular file the flag changes nothing).
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, bad(statReason(err))
	}
	info, err := f.Stat()
	switch {
	case err != nil:
		f.Close()
		return nil, bad(statReason(err))
	case notRegular(info) != "":
		f.Close()
		return nil, bad(notRegular(info))
	case info.Size() > limits.MaxFileBytes:
		f.Close()
		return nil, bad(fmt.Sprintf("it has %d bytes, more than the limit of %d (dpkit serve --max-file-bytes)", info.Size(), limits.MaxFileBytes))
	}
	return &limitedFile{f: f, r: bufio.NewReaderSize(f, 64<<10), path: path, limits: limits}, nil
}

// notRegular says what info is when it is not a regular file, "" when it is one.
func notRegular(info fs.FileInfo) string {
	m := info.Mode()
	switch {
	case m.IsRegular():
		return ""
	case m.IsDir():
		return "it is a directory"
	case m&fs.ModeNamedPipe != 0:
		return "it is a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "it is a socket"
	case m&fs.ModeDevice != 0:
		return "it is a device"
	}
	return "it is not a regular file (" + m.Type().String() + ")"
}

// statReason says why a file cannot be opened, without the error's own copy of the path.
func statReason(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "it does not exist"
	case errors.Is(err, fs.ErrPermission):
		return "the server may not read it"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// limitedFile reads a file within limits.
type limitedFile struct {
	f      *os.File
	r      *bufio.Reader
	path   string
	limits Limits
	total  int64 // bytes read
	line   int   // bytes since the last newline
	lines  int   // newlines read
}

func (l *limitedFile) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for buf := p[:n]; ; {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			l.line += len(buf)
		} else {
			l.line += i
		}
		if l.line > l.limits.MaxLineBytes {
			return 0, &dpkit.ParamError{Pkg: "datasource", Name: "path", Value: l.path,
				Want: fmt.Sprintf("a CSV file whose lines have at most %d bytes (dpkit serve --max-line-bytes), but line %d is longer", l.limits.MaxLineBytes, l.lines+1)}
		}
		if i < 0 {
			break
		}
		l.line, l.lines, buf = 0, l.lines+1, buf[i+1:]
	}
	l.total += int64(n)
	if l.total > l.limits.MaxFileBytes {
		return 0, &dpkit.ParamError{Pkg: "datasource", Name: "path", Value: l.path,
			Want: fmt.Sprintf("a CSV file of at most %d bytes (dpkit serve --max-file-bytes), but it grew beyond that while it was read", l.limits.MaxFileBytes)}
	}
	return n, err
}

func (l *limitedFile) Close() error { return l.f.Close() }
