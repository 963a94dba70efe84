// Package repartition splits a DynamoDB export (export.Export, with an
// overlay of incremental exports or none) by entity type into an output of
// part files, entity=<Type>/part-<source>-<seq>.json.gz, ImportTable's
// input, with a manifest per entity and, written last, a summary; a
// transform may rewrite, drop or split items on the way. It guarantees that
// an output with a summary is complete and reconciled (items out equal the
// items read, less the overlay's deletions and the transform's drops, plus
// their additions and insertions), that every object appears whole or not
// at all, that a crashed run resumes file by file and ends byte for byte
// like a clean one, and that lines nothing rewrote are copied byte for
// byte. The same steps (begin, processFile per data file, finish) run in
// one process (Run) or as the Lambda steps of a Step Functions Distributed
// Map (Job).
package repartition
