// Package reimport loads a finished repartition's output back into
// DynamoDB: into a new table with ImportTable, into an existing one with
// the batch writer (infra/batchwrite: BatchWriteItem, or a conditional
// PutItem per item that never overwrites newer data) or with
// StartBulkPutItems. It guarantees that only a complete output is loaded
// (its summary present, every entity manifest matching the summary's
// checksum, every part its manifest's item count and MD5), that the S3
// prefix given to ImportTable or StartBulkPutItems holds exactly the
// manifest's parts, that a rerun of an operation started with a derived
// client token returns the same operation, and that a stopped load resumes
// from its checkpoint in the output.
package reimport
