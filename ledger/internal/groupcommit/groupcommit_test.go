package groupcommit

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/dpkit/dpkit/ledger"
)

// TestQueue: spends queued while a batch commits form the next batch, in arrival order;
// a spend whose context ends before its batch starts is skipped (never committed) and
// returns ctx.Err(); a batch error fails the spends without an outcome of their own;
// after Close, Spend fails with ErrClosed.
func TestQueue(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var batches [][]string
	commit := func(batch []*Call) error {
		mu.Lock()
		var keys []string
		for _, c := range batch {
			keys = append(keys, c.Rel.Key)
		}
		batches = append(batches, keys)
		first := len(batches) == 1
		mu.Unlock()
		if first {
			<-release // hold the first batch while others queue
		}
		for _, c := range batch {
			switch c.Rel.Key {
			case "refused":
				c.Err = ledger.ErrBudgetExceeded
			case "boom":
				return errors.New("boom")
			default:
				c.Got = c.Rel
			}
		}
		return nil
	}
	q := New(commit)
	spend := func(ctx context.Context, key string) error {
		_, _, err := q.Spend(ctx, []string{"b"}, ledger.Release{Budget: "b", Key: key}, nil)
		return err
	}
	errs := make(chan error, 1)
	go func() { errs <- spend(context.Background(), "first") }()
	for { // wait until the first batch is in commit
		mu.Lock()
		n := len(batches)
		mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	results := map[string]chan error{}
	for _, k := range []string{"a", "cancelled", "refused", "b"} {
		ch := make(chan error, 1)
		results[k] = ch
		c := context.Background()
		if k == "cancelled" {
			c = ctx
		}
		go func() { ch <- spend(c, k) }()
		for queued := 0; queued < len(results); { // in arrival order: wait until it is queued
			time.Sleep(time.Millisecond)
			q.mu.Lock()
			queued = len(q.queue)
			q.mu.Unlock()
		}
	}
	cancel()
	if err := <-results["cancelled"]; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled spend: %v", err)
	}
	close(release)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]error{"a": nil, "refused": ledger.ErrBudgetExceeded, "b": nil} {
		if err := <-results[k]; !errors.Is(err, want) && !(want == nil && err == nil) {
			t.Fatalf("spend %s: %v, want %v", k, err, want)
		}
	}
	mu.Lock()
	if len(batches) != 2 || len(batches[1]) != 3 || batches[1][0] != "a" || batches[1][1] != "refused" || batches[1][2] != "b" {
		t.Fatalf("batches %v: want [first] then [a refused b] (the cancelled spend skipped)", batches)
	}
	mu.Unlock()
	if err := spend(context.Background(), "boom"); err == nil || err.Error() != "boom" {
		t.Fatalf("a failing batch: %v", err)
	}
	q.Close()
	if err := spend(context.Background(), "late"); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}
