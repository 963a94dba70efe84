package objstore

// Names the external tests read.
const HashedLen = hashedLen
