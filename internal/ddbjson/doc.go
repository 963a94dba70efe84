// Package ddbjson is the one JSON scanner of the pipeline's decoders and of
// the export scanner: white space, strings (every one checked for UTF-8),
// numbers, literals and skipping a value, with the limits both apply,
// derived from DynamoDB's; and the checks of DynamoDB JSON that do not need
// the item built: numbers as DynamoDB accepts them (CheckNumber), a member
// name given twice in an object (Names), and a whole attribute value
// (Checker).
//
// The scanning functions take a byte slice and an index and return the
// index after what they read, or a negative index together with where the
// problem is and a message; so each caller keeps its own error style (the
// decoders' sticky errors, the export scanner's returned ones) and nothing
// allocates unless the input is bad.
package ddbjson
