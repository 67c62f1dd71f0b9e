package pld

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/dpkit/dpkit"
)

// Issue 24: mechanisms whose privacy loss is beyond what a lattice composes soundly are
// refused with a parameter error naming the range, never answered with ε = 0 (which is
// what laplace:scale=1e-200 and laplace:scale=1,sensitivity=1e250 once printed, the truth
// being about 1e200 and 1e250).
func TestExtremeLossesRefused(t *testing.T) {
	for _, s := range []string{
		"laplace:scale=1e-200",
		"laplace:scale=1,sensitivity=1e250",
		"rr:eps=1e300,k=2",
		"geometric:scale=1e-300",
		"subsampled-laplace:scale=1e-300,q=0.999",
		"subsampled-gaussian:sigma=1e-100,q=0.5",
	} {
		it, err := ParseMechanism(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		_, err = Compose([]Item{it, {Gaussian{Sigma: 1, Sensitivity: 1}, 1}}, nil)
		var pe *dpkit.ParamError
		if !errors.As(err, &pe) || pe.Pkg != "pld" || pe.Name != "mechanisms" {
			t.Errorf("%s: want a pld parameter error for mechanisms, got %v", s, err)
		}
	}
	// A single Gaussian is composed in closed form up to μ = 1e150; beyond, refused.
	if _, err := Compose([]Item{{Gaussian{Sigma: 1e-300, Sensitivity: 1}, 1}}, nil); err == nil {
		t.Error("μ = 1e300 accepted")
	}
}

// The panics of issue 24 (makeslice for subsampled Gaussians of σ = 0.03, q = 0.5 and
// σ = 0.01, q = 0.001; nil pointers for rr:eps=800 three times or with a Gaussian) are
// gone at the root (NaN masses, an infinite spacing), and each case answers a finite
// bracket that holds its reference (TestReference has the values); here, that the
// answers are finite, ordered and not 0.
func TestIssue24CasesAnswer(t *testing.T) {
	for _, c := range []struct {
		items []Item
		delta float64
		min   float64 // the ε must be at least this (the largest heavy atom's loss, less a little)
		d1    float64 // and δ(1) at least this (the mass of the heavy atoms)
	}{
		{[]Item{{PoissonSubsampled{Base: Gaussian{Sigma: 0.03, Sensitivity: 1}, Rate: 0.5}, 1}}, 1e-6, 700, 0.49},
		{[]Item{{PoissonSubsampled{Base: Gaussian{Sigma: 0.01, Sensitivity: 1}, Rate: 0.001}, 1}}, 1e-6, 5000, 0.00099},
		{[]Item{{RandomizedResponse{Epsilon: 800, K: 2}, 3}}, 1e-6, 2399, 0.99},
		{[]Item{{RandomizedResponse{Epsilon: 800, K: 2}, 1}, {Gaussian{Sigma: 1, Sensitivity: 1}, 1}}, 1e-6, 800, 0.99},
		{[]Item{{RandomizedResponse{Epsilon: 710, K: 2}, 2}}, 1e-6, 1419, 0.99},
		{[]Item{{PoissonSubsampled{Base: Laplace{Scale: 0.0014, Sensitivity: 1}, Rate: 0.5}, 1}}, 1e-6, 713.59, 0.49},
	} {
		comp, err := Compose(c.items, &Options{Delta: c.delta})
		if err != nil {
			t.Fatalf("%v: %v", c.items, err)
		}
		up, lo, err := comp.Epsilon(c.delta)
		if err != nil || math.IsNaN(up) || math.IsInf(up, 0) || lo > up || up < c.min {
			t.Errorf("%v: ε(%g) = [%g, %g], %v; want a finite bracket above %g", c.items, c.delta, lo, up, err, c.min)
		}
		if d, dl, _ := comp.Delta(1); !(d > c.d1 && dl <= d && d <= 1) {
			t.Errorf("%v: δ(1) = [%g, %g], want above %g", c.items, dl, d, c.d1)
		}
	}
}

// A cancelled context stops a composition with the context's error; progress is
// reported with done ≤ total, from one goroutine at a time, ending at done = total.
func TestComposeContext(t *testing.T) {
	items := []Item{{PoissonSubsampled{Base: Gaussian{Sigma: 1, Sensitivity: 1}, Rate: 0.01}, 100000}, {Laplace{Scale: 10, Sensitivity: 1}, 3}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ComposeContext(ctx, items, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v, want context.Canceled", err)
	}
	var mu sync.Mutex
	busy := false
	var last [2]int64
	progress := func(done, total int64) {
		mu.Lock()
		if busy {
			t.Error("progress called from two goroutines at once")
		}
		busy = true
		mu.Unlock()
		if done > total || done < last[0] {
			t.Errorf("progress (%d, %d) after (%d, %d)", done, total, last[0], last[1])
		}
		last = [2]int64{done, total}
		mu.Lock()
		busy = false
		mu.Unlock()
	}
	c, err := ComposeContext(context.Background(), items, &Options{Progress: progress})
	if err != nil {
		t.Fatal(err)
	}
	if last[0] != last[1] || last[0] != c.Work() || c.Work() == 0 {
		t.Errorf("last progress %v, work %d: want done = total = work", last, c.Work())
	}
}

// A panic in a convolution worker's goroutine (a bug; none is known) cannot be recovered
// by the caller, whose goroutine it is not: parallel carries it to the caller's goroutine
// and ComposeContext returns it as an *InternalError with the worker's stack (issue 24
// item 4). The worker here panics on purpose.
func TestWorkerPanicIsAnError(t *testing.T) {
	run := func() (err error) {
		defer recoverAbort(&err)
		parallel(8, 4, func(i int) {
			if i == 5 {
				panic("boom in worker 5")
			}
		})
		return nil
	}
	err := run()
	var ie *InternalError
	if !errors.As(err, &ie) || ie.Value != "boom in worker 5" || !strings.Contains(string(ie.Stack), "TestWorkerPanicIsAnError") {
		t.Fatalf("got %v (%#v)", err, err)
	}
	if !strings.Contains(err.Error(), "internal error: boom in worker 5") {
		t.Errorf("message %q", err.Error())
	}
	// A cancellation raised in a worker is still the context's error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = func() (err error) {
		defer recoverAbort(&err)
		parallel(4, 2, func(int) { newMeter(ctx, nil).add(1) })
		return nil
	}()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled worker: %v", err)
	}
	// Through Compose: a mechanism whose discretisation panics (in whichever goroutine)
	// gives an *InternalError, not a crash.
	_, err = Compose([]Item{{panicMechanism{Laplace{Scale: 1, Sensitivity: 1}}, 3}, {Gaussian{Sigma: 1, Sensitivity: 1}, 2}}, nil)
	if !errors.As(err, &ie) || ie.Value != "boom in cell" {
		t.Fatalf("Compose: %v", err)
	}
}

// panicMechanism is a Laplace mechanism whose loss cells panic (a stand-in for a bug).
type panicMechanism struct{ Laplace }

func (m panicMechanism) specs() []spec {
	var out []spec
	for _, s := range m.Laplace.specs() {
		out = append(out, panicSpec{s})
	}
	return out
}

type panicSpec struct{ spec }

func (panicSpec) cell(a, b float64) (p, lq, relErr float64) { panic("boom in cell") }
