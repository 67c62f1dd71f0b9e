package main

import (
	"context"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progressFunc is the progress callback of long computations (the library's
// Options.Progress, CONTRACTS.md "Long computations", and the CLI's own loops): done out
// of total units of work; total ≤ 0 when unknown. It is cheap and safe to call from any
// goroutine.
type progressFunc = func(done, total int64)

// Progress display timing: nothing is shown for a computation that ends within
// progressDelay; after that the display is redrawn every progressRefresh.
const (
	progressDelay   = time.Second
	progressRefresh = 150 * time.Millisecond
)

// forceProgress makes tests show progress on a writer that is not a terminal.
var forceProgress bool

// isTerminal reports whether w is a terminal (progress is shown there and nowhere else:
// not in a pipe, a file, or a test's buffer).
func isTerminal(w io.Writer) bool {
	if forceProgress {
		return true
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// runJob runs fn, a computation that may take long, and returns its error.
//
// While it runs, progress is drawn on stderr when stderr is a terminal: after
// progressDelay, a bar with the fraction done and an estimate of the time left when fn
// reports a total, or a spinner with the elapsed time when it does not; the display is
// erased when fn returns. Nothing is written otherwise, so --json output and pipes are
// unaffected (the bar is on stderr in any case).
//
// fn runs in its own goroutine: a panic there is returned as an internal error (exit
// status 3), and when ctx is cancelled (Ctrl-C) runJob returns ctx.Err() at once, even
// if fn does not watch ctx; fn is then abandoned and the process exits.
func runJob(ctx context.Context, stderr io.Writer, what string, fn func(ctx context.Context, progress progressFunc) error) error {
	var done, total atomic.Int64
	progress := func(d, t int64) {
		done.Store(d)
		total.Store(t)
	}
	result := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				result <- panicError(p)
			}
		}()
		result <- fn(ctx, progress)
	}()

	var display *progressDisplay
	defer func() { display.close() }()
	var tick <-chan time.Time
	if isTerminal(stderr) {
		t := time.NewTicker(progressRefresh)
		defer t.Stop()
		tick = t.C
	}
	start := time.Now()
	for {
		select {
		case err := <-result:
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-tick:
			if time.Since(start) < progressDelay {
				continue
			}
			if t := total.Load(); display == nil || display.max < 0 && t > 1 {
				display.close() // a spinner becomes a bar once a total is known
				display = newProgressDisplay(stderr, what, t)
			}
			display.update(done.Load(), total.Load())
		}
	}
}

// progressDisplay is the bar (or spinner) runJob draws.
type progressDisplay struct {
	once sync.Once
	bar  *progressbar.ProgressBar
	max  int64
}

func newProgressDisplay(w io.Writer, what string, total int64) *progressDisplay {
	max := int64(-1) // spinner: no total, or a single step
	if total > 1 {
		max = total
	}
	bar := progressbar.NewOptions64(max,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(what),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(progressRefresh/2),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionUseANSICodes(true),
	)
	_ = bar.RenderBlank()
	return &progressDisplay{bar: bar, max: max}
}

// update redraws the display with done out of total.
func (d *progressDisplay) update(done, total int64) {
	if d.max > 0 && total > 1 && total != d.max {
		d.bar.ChangeMax64(total)
		d.max = total
	}
	if d.max > 0 {
		_ = d.bar.Set64(min(done, d.max))
		return
	}
	_ = d.bar.Add64(1) // spinner: advance once per refresh
}

// close erases the display (nil-safe).
func (d *progressDisplay) close() {
	if d == nil {
		return
	}
	d.once.Do(func() {
		_ = d.bar.Clear()
		_ = d.bar.Exit()
	})
}
