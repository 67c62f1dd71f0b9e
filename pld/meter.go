package pld

import (
	"context"
	"errors"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// A meter follows the work of one Compose call: it counts work units (about one
// floating-point multiply-add or FFT butterfly each), stops the computation when its
// context is cancelled, and reports progress. A nil meter counts nothing.
//
// Cancellation unwinds the computation with a panic of type abort, which ComposeContext
// recovers and returns as the context's error: the convolutions run deep in recursive
// code that has no error path of its own, and a cancelled composition has no partial
// result worth returning. A lattice that would exceed maxLatticeBins aborts the same
// way (see refuseLattice).
type meter struct {
	ctx      context.Context
	progress func(done, total int64)
	work     atomic.Int64
	total    atomic.Int64 // the current estimate of the whole, for progress
	limit    atomic.Int64 // > 0: the work past which an optional refinement stops (see overBudget)

	mu       sync.Mutex // serialises progress calls
	lastCall time.Time
}

// abort carries an error (a context's, or a refusal) up to ComposeContext. tooLarge
// marks a lattice refused for its size (refuseLattice) and overBudget work past the
// meter's limit: an optional refinement catches both and stops there (see tiltRound).
type abort struct {
	err        error
	tooLarge   bool
	overBudget bool
}

// maxLatticeBins bounds every lattice a composition builds (2^23 float64: 64 MiB; a
// composition holds a few dozen lattices and the FFT buffers of the largest at most).
// Options.MaxBins keeps the refinement far below it; only a workload whose losses span
// too many bins of the finest spacing float64 resolves reaches it.
const maxLatticeBins = 1 << 23

// refuseLattice aborts the composition: a lattice of n bins is beyond maxLatticeBins.
func refuseLattice(n float64) {
	panic(abort{err: paramErr("mechanisms", n, "a workload whose lattice fits in 2^23 bins (its privacy losses span too many orders of magnitude: compose the extreme mechanisms separately)"), tooLarge: true})
}

// progressEvery is the shortest interval between two progress calls.
const progressEvery = 100 * time.Millisecond

func newMeter(ctx context.Context, progress func(done, total int64)) *meter {
	return &meter{ctx: ctx, progress: progress}
}

// add counts n units of work, then stops the computation if the context is done and
// reports progress at most every progressEvery.
func (m *meter) add(n int64) {
	if m == nil {
		return
	}
	done := m.work.Add(n)
	if err := m.ctx.Err(); err != nil {
		panic(abort{err: err})
	}
	if lim := m.limit.Load(); lim > 0 && done > lim {
		panic(abort{err: errOverBudget, overBudget: true})
	}
	if m.progress == nil {
		return
	}
	if !m.mu.TryLock() {
		return // another goroutine is reporting
	}
	defer m.mu.Unlock()
	if now := time.Now(); now.Sub(m.lastCall) >= progressEvery {
		m.lastCall = now
		m.progress(done, max(done, m.total.Load()))
	}
}

// errOverBudget is the error of an abort past the meter's limit; an optional refinement
// recovers it (tiltRound), so it reaches no caller.
var errOverBudget = errors.New("pld: the work budget of an optional refinement is spent")

// setLimit makes add abort (overBudget) once the work counted exceeds limit (0: never).
func (m *meter) setLimit(limit int64) {
	if m != nil {
		m.limit.Store(limit)
	}
}

// done returns the work counted so far.
func (m *meter) done() int64 {
	if m == nil {
		return 0
	}
	return m.work.Load()
}

// expect sets the estimate of the total work reported with progress.
func (m *meter) expect(total int64) {
	if m != nil {
		m.total.Store(total)
	}
}

// finish reports the final progress (done = total).
func (m *meter) finish() {
	if m == nil || m.progress == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.work.Load()
	m.progress(d, d)
}

// recoverAbort turns an abort unwinding through the computation into *err, and any other
// panic (a bug: raised in a worker goroutine of parallel, or in the caller's) into an
// *InternalError: a library does not crash its caller, and a panic in a worker goroutine
// could not be recovered by the caller at all.
func recoverAbort(err *error) {
	r := recover()
	switch r := r.(type) {
	case nil:
	case abort:
		*err = r.err
	case workerPanic:
		*err = &InternalError{Value: r.value, Stack: r.stack}
	default:
		*err = &InternalError{Value: r, Stack: debug.Stack()}
	}
}
