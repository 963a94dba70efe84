package batchwrite

// Names the external tests read.
const MaxBatch = maxBatch
