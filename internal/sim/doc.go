// Package sim is a deterministic simulation of a DynamoDB table's change
// stream and of the Lambda event source mapping that delivers it, used by the
// engine's and the archive's exactly-once tests, the `tributary demo`
// command and benchmarks. It guarantees that the same seed gives the same
// run, byte for byte.
//
// The pieces, in the order data flows through them:
//
//	Workload.Generate   table operations over the seed domains (workload.go)
//	Table               applies them: optimistic-locking versions, no record for no-op writes (table.go)
//	Stream              stamps each change: shard, sequence number, clock, event ID (stream.go)
//	ToKinesis           DynamoDB's Kinesis destination: duplicates, local reordering (kinesis.go)
//	StreamsShards, KinesisShards, StreamsEvent, KinesisEvent
//	                    the records in Lambda's wire formats; the *Shards forms group
//	                    them by shard as ESM.Run's input (encode.go)
//	ESM.Run             Lambda's event source mapping: batches (of varying size),
//	                    partial failures, retries, bisection, redelivery,
//	                    duplicate invocations, replays (esm.go)
//	FaultyStore, FlakyInvoke
//	                    injected failures in the store and the invocation (faults.go)
//
// Workload.Run does the first three in one call and returns a History: the
// records and the final table, whose items are what a from-scratch
// recomputation of every projection must agree with.
//
// Everything is seeded (math/rand/v2 PCG) and single-threaded: no wall-clock
// time, no map iteration order, no goroutines. The same seed gives the same
// operations, the same records and the same event bytes, on every run.
//
// Items, images and keys in records are shared, immutable maps: callers must
// not modify them.
package sim
