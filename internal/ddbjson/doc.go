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
//
// It is also the one JSON string codec of the hand-written encoders:
// Unquote decodes strings with escapes exactly as encoding/json reads them;
// Quote encodes for DynamoDB JSON (images, item keys, archive lines) and
// QuoteLine for CloudWatch embedded-metric lines, in a form that
// encoding/json and Unquote read back as the original string.
package ddbjson
