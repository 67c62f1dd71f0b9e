package dpbeam

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/ledger"
	"github.com/dpkit/dpkit/mechanism"
)

// ErrRerun is matched (errors.Is) by the error of Reserve for a job that the ledger
// already holds: running it again would release fresh noise on the same data, which
// the single recorded release does not pay for. See ReserveOptions.AllowRerun.
var ErrRerun = errors.New("dpbeam: job already reserved")

// ErrNotReserved is the error a worker reports when it is asked to run a job that was
// not reserved in a ledger: nothing is read or released.
var ErrNotReserved = errors.New("dpbeam: job not reserved in a ledger")

// ReserveOptions are the non-privacy details of a reservation.
type ReserveOptions struct {
	// Analyst is recorded with the release (optional).
	Analyst string
	// AllowRerun lets Reserve succeed for a job the ledger already holds with the same
	// description, without charging again. Use it only to retry a run whose outputs
	// were never published (a run that failed or was cancelled): every run draws fresh
	// noise, and publishing the outputs of two runs spends twice the recorded cost
	// (their composition), which the ledger does not know about.
	AllowRerun bool
}

// Reservation is the ledger's record of a job: the release that pays for all of the
// job's aggregations.
type Reservation struct {
	Release ledger.Release // the recorded release (cost, key, sequence number, time)
	Cost    Cost           // the job's cost, as composed by Cost
	// Rerun is true when the ledger already held the job (ReserveOptions.AllowRerun)
	// and nothing was charged this time.
	Rerun bool
}

// ticket is carried by every DoFn of the job. Beam serializes the DoFns (and so the
// ticket they point to) when the pipeline is run, after Reserve has stamped it; a
// worker whose ticket is not stamped refuses to start.
type ticket struct {
	Job      string
	Reserved bool
	Seq      int64
}

// check is called by every DoFn's Setup.
func (t *ticket) check() error {
	if t == nil || !t.Reserved {
		job := ""
		if t != nil {
			job = t.Job
		}
		return fmt.Errorf("%w: job %q: call PrivacySpec.Reserve before running the pipeline", ErrNotReserved, job)
	}
	return nil
}

// Reserve decides, before the job runs, whether it may run: it composes the job's
// aggregations (Cost), refuses a job that does not fit its own Budget, and spends the
// cost on budget in the dpkit ledger l — one release for the whole job, with
// idempotency key "dpbeam:" + Job and the job's description (its aggregations'
// per-partition mechanisms as JSON descriptors, recorded as a note: the ledger has no
// descriptor for "k copies of a mechanism") — in one ledger transaction. A job whose release
// does not fit the ledger budget is refused (the error matches
// ledger.ErrBudgetExceeded) and nothing is recorded. Only after Reserve succeeds do
// the job's workers start (run the pipeline after Reserve).
//
// Reserve of a job the ledger already holds charges nothing. With the same description
// it returns an error matching ErrRerun, unless opts.AllowRerun; with a different
// description (same job name, other aggregations or parameters) the error matches
// ledger.ErrIdempotencyConflict: give a changed job a new name.
func (s *PrivacySpec) Reserve(ctx context.Context, l *ledger.Ledger, budget string, opts ReserveOptions) (*Reservation, error) {
	if l == nil {
		return nil, &dpkit.ParamError{Pkg: pkg, Name: "ledger", Want: "a *ledger.Ledger"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reserved != nil {
		return s.reserved, nil
	}
	cost, err := s.cost()
	if err != nil {
		return nil, err
	}
	desc, err := s.describe()
	if err != nil {
		return nil, err
	}
	// The description is a note (descriptor kind "text") holding the job's JSON; when it
	// is too long for the ledger's mechanism field, the note holds its SHA-256 and the
	// JSON goes in the release's payload.
	mech := mechanism.Describe(mechanism.Text{Text: desc})
	var payload []byte
	if b, err := mech.MarshalJSON(); err != nil || len(b) > ledger.MaxMechanismLen {
		sum := sha256.Sum256([]byte(desc))
		mech = mechanism.Describe(mechanism.Text{Text: fmt.Sprintf(`{"job":%q,"aggregations":%d,"sha256":"%s","description":"in the release payload"}`,
			s.job, len(s.aggs), hex.EncodeToString(sum[:]))})
		payload = []byte(desc)
	}
	rc, err := l.Spend(ctx, ledger.Request{
		Budget: budget, Cost: cost.Budget, Mechanism: mech, Analyst: opts.Analyst,
		Key: "dpbeam:" + s.job, Payload: payload,
	})
	if err != nil {
		return nil, fmt.Errorf("dpbeam: job %q refused by the ledger: %w", s.job, err)
	}
	if rc.Replayed && !opts.AllowRerun {
		twice := "twice its cost"
		if c, _, err := s.composed(2); err == nil && c.Method != "" {
			twice = c.Budget.String()
		}
		return nil, fmt.Errorf("%w: job %q was reserved on budget %q at %s (release %d, %v); a second run would publish fresh noise on the same data: the outputs of both runs together cost %s, which the ledger does not record — read the first run's outputs, or give a new job a new name (ReserveOptions.AllowRerun retries a run whose outputs were never published)",
			ErrRerun, s.job, budget, rc.Release.Time.Format(time.RFC3339), rc.Release.Seq, rc.Release.Cost, twice)
	}
	s.reserved = &Reservation{Release: rc.Release, Cost: cost, Rerun: rc.Replayed}
	s.ticket.Reserved, s.ticket.Seq = true, rc.Release.Seq
	return s.reserved, nil
}
