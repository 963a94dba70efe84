package reimport

// Names the external tests read.
const CheckpointDir = checkpointDir
