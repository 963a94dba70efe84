// Package engine is Tributary's projection engine: it keeps aggregate
// tables exactly right under the at-least-once delivery of every change
// source.
//
// The Engine applies, for each item, contributions(newest image) −
// contributions(last applied image) of the projections of a
// projections.Set, with a per-item ledger written in the same transaction
// as the aggregate deltas, so retries, duplicates, reordering and replays
// change nothing twice. Open is the one way to make one: it checks that
// the table was built by the set (its projection-set marker).
//
// Beside the Engine are the parts the capabilities drive: the backfill's
// partials (OpenPartial, HandleBatchInto, Fold), the gates' check of a
// table as of an export (AsOfCheck) and the remodel's view of the ledger
// (ItemState, Token, ExportState). The package is internal: a team reaches
// it through the functions' Main(env) and cli.Main, and writes projections
// against package projections, which it imports.
package engine
