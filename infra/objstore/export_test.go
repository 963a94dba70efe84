package objstore

// Names the external tests read.
const HashedLen = hashedLen

// NameCollisionError is the error of Names.Add, for the external tests.
type NameCollisionError = nameCollisionError
