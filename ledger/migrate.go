package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dpkit/dpkit/mechanism"
	"github.com/dpkit/dpkit/pld"
)

// The data migration of the SQL stores (ledger/sqlite and ledger/postgres, schema
// version 4): before it, the ledger recorded mechanisms as the command line's text
// ("gaussian:sigma=100,sensitivity=1") or as free text; from it on, as typed, versioned
// descriptors of package mechanism, in their JSON form. This file reads the old text
// once, for that conversion; nothing else in the ledger parses it.

// LegacyMechanism converts a mechanism recorded as text by an earlier dpkit to its
// descriptor: text in the command line's KIND:key=value syntax for one release (count 1)
// becomes the typed descriptor of that mechanism (mechanism.DescribePLD of
// pld.ParseMechanism's result, the same privacy loss distribution the old ledger
// accounted); any other text becomes a note (kind text) holding it verbatim; "" stays
// the zero Descriptor.
func LegacyMechanism(text string) mechanism.Descriptor {
	if text == "" {
		return mechanism.Descriptor{}
	}
	if it, err := pld.ParseMechanism(text); err == nil && it.Count == 1 {
		if d, err := mechanism.DescribePLD(it.Mechanism); err == nil {
			return d
		}
	}
	return mechanism.Describe(mechanism.Text{Text: text})
}

// legacyPolicy converts a stored policy whose plan_mechanisms are texts (an earlier
// dpkit's form) to descriptors ("" becomes null). It returns ok = false when there is
// nothing to convert.
func legacyPolicy(policy string) (string, bool, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(policy), &fields); err != nil {
		return "", false, err
	}
	raw, found := fields["plan_mechanisms"]
	var texts []string
	if !found || json.Unmarshal(raw, &texts) != nil {
		return "", false, nil // absent, or descriptors already
	}
	ds := make([]mechanism.Descriptor, len(texts))
	for i, t := range texts {
		if t == "" {
			continue
		}
		ds[i] = LegacyMechanism(t)
		if ds[i].Kind == "text" {
			return "", false, fmt.Errorf("plan mechanism %q is not in the KIND:key=value syntax", t)
		}
	}
	b, err := json.Marshal(ds)
	if err != nil {
		return "", false, err
	}
	fields["plan_mechanisms"] = b
	out, err := json.Marshal(fields)
	return string(out), true, err
}

// MigrateMechanisms converts, inside the store's migration transaction tx, every
// release whose mechanism column holds text (not a JSON descriptor) and every budget
// policy whose plan_mechanisms hold texts, to descriptors (LegacyMechanism). The SQL is
// portable ($n placeholders) for both stores; the caller lifts the append-only trigger
// of dpkit_releases around it. Rows are converted in batches of 10000, ordered by seq.
func MigrateMechanisms(ctx context.Context, tx *sql.Tx) error {
	type row struct {
		seq  int64
		text string
	}
	after := int64(0)
	for {
		rows, err := tx.QueryContext(ctx, "SELECT seq, mechanism FROM dpkit_releases WHERE seq > $1 ORDER BY seq LIMIT 10000", after)
		if err != nil {
			return err
		}
		var batch []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.seq, &r.text); err != nil {
				rows.Close()
				return err
			}
			batch = append(batch, r)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if len(batch) == 0 {
			break
		}
		after = batch[len(batch)-1].seq
		for _, r := range batch {
			if r.text == "" || strings.HasPrefix(strings.TrimSpace(r.text), "{") {
				continue
			}
			v, err := LegacyMechanism(r.text).Value()
			if err != nil {
				return fmt.Errorf("ledger: release %d: %w", r.seq, err)
			}
			if _, err := tx.ExecContext(ctx, "UPDATE dpkit_releases SET mechanism = $1 WHERE seq = $2", v, r.seq); err != nil {
				return err
			}
		}
	}
	return migratePolicies(ctx, tx)
}

// migratePolicies converts the plan mechanisms of the budgets' policies.
func migratePolicies(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, "SELECT id, policy FROM dpkit_budgets")
	if err != nil {
		return err
	}
	type row struct{ id, policy string }
	var todo []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.policy); err != nil {
			rows.Close()
			return err
		}
		p, ok, err := legacyPolicy(r.policy)
		if err != nil {
			rows.Close()
			return fmt.Errorf("%w: budget %q: %v", ErrNotLedger, r.id, err)
		}
		if ok {
			todo = append(todo, row{r.id, p})
		}
	}
	if err := rows.Close(); err != nil {
		return err
	}
	for _, r := range todo {
		if _, err := tx.ExecContext(ctx, "UPDATE dpkit_budgets SET policy = $1 WHERE id = $2", r.policy, r.id); err != nil {
			return err
		}
	}
	return nil
}
