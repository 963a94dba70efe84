// Package engine is Tributary's projection engine: it keeps aggregate
// tables exactly right under the at-least-once delivery of every change
// source.
//
// An Engine applies, for each item, contributions(newest image) −
// contributions(last applied image) of the projections of a
// projections.Set, with a per-item ledger written in the same transaction
// as the aggregate deltas, so retries, duplicates, reordering and replays
// change nothing twice. Open is the one way to make one: it accepts a
// table marked for exactly the set (its projection-set marker; ReadMarker,
// Adopt), marks an empty, unmarked one, refuses any other with a
// *SetMismatchError, and has the engine skip the entity types the set was
// selected away from (projections.Set.Ignored).
//
// What the capabilities drive sits beside that: the backfill's partials
// (Engine.OpenPartial, HandleBatchInto, Fold), the gates' check of a table
// as of an export (AsOfCheck and its steps), the remodel's reading of the
// ledger (ItemState, Token, ExportState, InTick, JudgeTick) and its hooks
// on a projection (OthersReader, ClaimDescriber), the command line's dry
// run (DryRun) and its status (ReadLedgerStatus).
//
// The package is internal: a team writes projections against package
// projections, which this package imports, and runs them through the
// functions' Main(env) and cli.Main. Its error messages still begin
// "projections:" where they did when the engine was that package's, since
// operators' alerts and the tests match them.
package engine
