package pipeline

// Names the external tests read.
const MaxStreamsRecordBytes = maxStreamsRecordBytes
const MaxLambdaRecordBytes = maxLambdaRecordBytes
const MaxKinesisDataBytes = maxKinesisDataBytes
