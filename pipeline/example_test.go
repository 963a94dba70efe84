package pipeline_test

import (
	"fmt"

	"github.com/tributary/tributary/pipeline"
)

func ExampleDecodeStreamsEvent() {
	event := []byte(`{"Records":[{"eventID":"1","eventName":"INSERT","awsRegion":"eu-west-1",
	  "eventSourceARN":"arn:aws:dynamodb:eu-west-1:111122223333:table/app/stream/2026-11-01T00:00:00.000",
	  "dynamodb":{"ApproximateCreationDateTime":1796033700,
	    "Keys":{"PK":{"S":"USER#u42"},"SK":{"S":"ORDER#2026-11-30#o1"}},
	    "NewImage":{"PK":{"S":"USER#u42"},"SK":{"S":"ORDER#2026-11-30#o1"},"EntityType":{"S":"Order"},
	                "status":{"S":"PAID"},"total":{"N":"120.50"},"version":{"N":"3"}},
	    "SequenceNumber":"4421584500000000017450439091","SizeBytes":112,"StreamViewType":"NEW_AND_OLD_IMAGES"}}]}`)

	changes, err := pipeline.DecodeStreamsEvent(event, pipeline.Options{})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	for _, c := range changes {
		fmt.Println(c.Kind, c.NewType, c.Version, c.Table, c.Position.SequenceNumber)
		fmt.Println(pipeline.KeyString(c.Keys))
	}
	// Output:
	// INSERT Order 3 app 4421584500000000017450439091
	// PK=USER#u42 SK=ORDER#2026-11-30#o1
}
