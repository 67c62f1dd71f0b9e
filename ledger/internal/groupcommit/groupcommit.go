// Package groupcommit is the queue through which a ledger store of one process commits
// concurrent spends together (ledger/sqlite, ledger/postgres): Spend calls queue for one
// writer goroutine, which hands up to MaxBatch of them at a time to the store's commit
// function — one transaction, one durable commit for the batch, each spend decided in
// queue order against the statistics the ones before it left, exactly as if they had come
// one after another — and acknowledges each only after that function returned. Spends
// that arrive while a batch commits form the next batch: the busier the store, the larger
// its batches.
package groupcommit

import (
	"context"
	"errors"
	"sync"

	"github.com/dpkit/dpkit/ledger"
)

// MaxBatch is the largest number of spends handed to the commit function at once.
const MaxBatch = 256

// ErrClosed is the error of a Spend after Close.
var ErrClosed = errors.New("the store is closed")

// Call is one spend in a batch. The commit function sets Got, Replayed and Err of each
// call it decides (Err for a spend refused or failed on its own).
type Call struct {
	Chain  []string       // the budget and its ancestors, root first
	Rel    ledger.Release // the release asked for
	Decide ledger.Decide

	Got      ledger.Release
	Replayed bool
	Err      error

	ctx  context.Context
	done chan struct{}
}

// Commit records batch in one transaction and commits it durably. An error fails every
// call of the batch that has no error of its own; a call may fail alone by setting its
// Err (the others are then still committed).
type Commit func(batch []*Call) error

// Queue is the spend queue of one store. It is safe for concurrent use.
type Queue struct {
	commit Commit

	mu      sync.Mutex
	queue   []*Call
	closed  bool
	wake    chan struct{} // capacity 1: the queue may be non-empty
	stopped chan struct{} // closed when the writer has exited
	once    sync.Once
}

// New starts the writer of a queue whose batches commit records.
func New(commit Commit) *Queue {
	q := &Queue{commit: commit, wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	go q.writer()
	return q
}

// Spend queues one spend and waits until the transaction that holds it has committed
// (or failed). If ctx ends while the spend waits, Spend returns ctx.Err(): the spend is
// skipped if its batch has not started, and otherwise may still be recorded (as after a
// crash: a retry with its key tells).
func (q *Queue) Spend(ctx context.Context, chain []string, rel ledger.Release, decide ledger.Decide) (ledger.Release, bool, error) {
	c := &Call{Chain: chain, Rel: rel, Decide: decide, ctx: ctx, done: make(chan struct{})}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return ledger.Release{}, false, ErrClosed
	}
	q.queue = append(q.queue, c)
	q.mu.Unlock()
	q.notify()
	select {
	case <-c.done:
	case <-ctx.Done():
		return ledger.Release{}, false, ctx.Err()
	}
	if c.Err != nil {
		return ledger.Release{}, false, c.Err
	}
	return c.Got, c.Replayed, nil
}

// Close waits for the spends already queued to be committed; later spends fail with
// ErrClosed.
func (q *Queue) Close() {
	q.once.Do(func() {
		q.mu.Lock()
		q.closed = true
		q.mu.Unlock()
		q.notify()
		<-q.stopped
	})
}

func (q *Queue) notify() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// writer commits the queued spends, a batch at a time, until the queue is closed and
// empty.
func (q *Queue) writer() {
	defer close(q.stopped)
	for {
		q.mu.Lock()
		n := min(len(q.queue), MaxBatch)
		batch := make([]*Call, n)
		copy(batch, q.queue)
		q.queue = append(q.queue[:0], q.queue[n:]...)
		closed := q.closed
		q.mu.Unlock()
		switch {
		case n > 0:
			q.run(batch)
		case closed:
			return
		default:
			<-q.wake
		}
	}
}

// run commits the calls of batch whose context is still live, and acknowledges each.
func (q *Queue) run(batch []*Call) {
	live := make([]*Call, 0, len(batch))
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.Err = err
			close(c.done)
			continue
		}
		live = append(live, c)
	}
	if len(live) == 0 {
		return
	}
	err := q.commit(live)
	for _, c := range live {
		if err != nil && c.Err == nil {
			c.Got, c.Replayed, c.Err = ledger.Release{}, false, err
		}
		close(c.done)
	}
}
