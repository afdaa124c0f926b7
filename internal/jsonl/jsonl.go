// Package jsonl writes JSON Lines: one JSON object per line, the --json
// output of the CLI's tables and of the sweeps that produce them.
package jsonl

import (
	"encoding/json"
	"io"
)

// Write writes rows to w, one JSON object per line, and stops at the
// first error.
func Write[T any](w io.Writer, rows []T) error {
	enc := json.NewEncoder(w)
	for _, r := range rows {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}
