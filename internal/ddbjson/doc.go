// Package ddbjson holds what the pipeline's decoders and the export scanner
// share to read DynamoDB JSON: the check of a number as DynamoDB accepts it
// (CheckNumber), and how many significant digits DynamoDB stores of it.
package ddbjson
