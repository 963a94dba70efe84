// Command archiver archives the desk table's TTL removals to S3
// (configuration: function.ArchiverConfig).
package main

import "github.com/tributary/tributary/functions/function"

func main() { function.Archiver() }
