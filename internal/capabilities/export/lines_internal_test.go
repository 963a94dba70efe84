package export

import "github.com/tributary/tributary/pipeline"

// appendItemLine is AppendItemLine under the name the scanner's tests use.
func appendItemLine(buf []byte, item pipeline.Item) []byte { return AppendItemLine(buf, item) }
