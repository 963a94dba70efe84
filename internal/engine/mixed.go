package engine

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/projections/driver"
)

// MixedPrefix starts the ledger keys of a backfill's records that items
// of a data file were applied from an object that is not the exported
// one (the object changed while it was read): MixedPrefix, the job's id,
// '/', and a hash of the file's name. The record's body is a JSON object
// naming the "file" and the "error" found.
const MixedPrefix = "#tributary/backfill/mixed/"

// describeMixed renders a record under MixedPrefix for people: the file,
// the job and what was found, and what to do.
func describeMixed(key string, e driver.LedgerEntry) string {
	job := strings.TrimPrefix(key, MixedPrefix)
	if i := strings.LastIndexByte(job, '/'); i >= 0 {
		job = job[:i]
	}
	var m struct {
		File  string `json:"file"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(e.Body, &m); err != nil || m.File == "" {
		return fmt.Sprintf("a data file of backfill job %s (record %s) was read in part from an object that is not the exported one", quote.Printable(job), quote.Printable(key))
	}
	return fmt.Sprintf("data file %s of backfill job %s was read in part from an object that is not the exported one (%s)", quote.Printable(m.File), quote.Printable(job), quote.Printable(m.Error))
}
