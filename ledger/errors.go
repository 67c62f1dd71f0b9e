package ledger

import (
	"errors"
	"fmt"

	"github.com/dpkit/dpkit"
)

// Sentinel errors; match them with errors.Is.
var (
	// ErrUnknownBudget: no budget has the given ID.
	ErrUnknownBudget = errors.New("ledger: unknown budget")
	// ErrBudgetExists: Create was given an ID already in use.
	ErrBudgetExists = errors.New("ledger: budget already exists")
	// ErrBudgetExceeded is matched by every *BudgetExceededError (a refused spend).
	ErrBudgetExceeded = errors.New("ledger: budget exceeded")
	// ErrIdempotencyConflict: an idempotency key was reused for a different release.
	ErrIdempotencyConflict = errors.New("ledger: idempotency key reused with different content")
	// ErrNotLedger: the database is not a dpkit ledger (a foreign or corrupted file).
	ErrNotLedger = errors.New("ledger: not a dpkit ledger database")
	// ErrSchemaVersion: the database was written by a different, incompatible schema version.
	ErrSchemaVersion = errors.New("ledger: unsupported ledger schema version")
	// ErrAudit: a recorded budget's statistics disagree with its release log.
	ErrAudit = errors.New("ledger: audit failed")
)

// BudgetExceededError is a refused spend: the release would not fit the budget under
// its policy. It matches ErrBudgetExceeded and dpkit.ErrInfeasible (errors.Is), and says
// what is left. Nothing was recorded.
type BudgetExceededError struct {
	Budget    string       // the budget that refused (a sub-budget or its parent)
	Policy    string       // e.g. "fixed", "adaptive/basic"
	Requested dpkit.Budget // the cost asked for
	Reason    string       // why it does not fit
	Left      Remaining    // what is left under the policy, for releases of the requested δ
}

func (e *BudgetExceededError) Error() string {
	next := "no further release fits"
	if e.Left.NextAllowed {
		next = fmt.Sprintf("one more release with delta %g may have epsilon up to %g", e.Left.Cost.Delta, e.Left.NextEpsilon)
	}
	return fmt.Sprintf("ledger: budget %q (%s) exceeded: release %v refused: %s; left: %d more release(s) of this cost, %s",
		e.Budget, e.Policy, e.Requested, e.Reason, e.Left.Releases, next)
}

// Is reports whether target is ErrBudgetExceeded or dpkit.ErrInfeasible.
func (e *BudgetExceededError) Is(target error) bool {
	return target == ErrBudgetExceeded || target == dpkit.ErrInfeasible
}
