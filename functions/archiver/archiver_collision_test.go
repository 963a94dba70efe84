package archiver_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tributary/tributary/functions/archiver"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/infra/objstore/objstoretest"
	"github.com/tributary/tributary/internal/capabilities/archive"
	"github.com/tributary/tributary/projections"
)

// ttlRemovalRecord renders a TTL removal of an item of type typ.
func ttlRemovalRecord(seq int, pk, typ string) string {
	img, _ := json.Marshal(map[string]map[string]string{"PK": {"S": pk}, "SK": {"S": "x"}, "EntityType": {"S": typ}, "ttl": {"N": "1767225000"}})
	return fmt.Sprintf(`{"eventID":"r%d","eventName":"REMOVE","eventVersion":"1.1","eventSource":"aws:dynamodb","awsRegion":"eu-west-1","eventSourceARN":"arn:aws:dynamodb:eu-west-1:111122223333:table/App/stream/2026-01-01T00:00:00.000","userIdentity":{"type":"Service","principalId":"dynamodb.amazonaws.com"},"dynamodb":{"ApproximateCreationDateTime":1767225600,"Keys":{"PK":{"S":%q},"SK":{"S":"x"}},"OldImage":%s,"SequenceNumber":"%d","SizeBytes":100,"StreamViewType":"NEW_AND_OLD_IMAGES"}}`,
		seq, pk, img, seq)
}

// TestArchiverRefusesCollidingTypes: with a hash injected so that two long
// entity types shorten to one segment, the archiver's handler never puts
// both in one object: it archives the batch up to the second type's first
// removal and reports that record, so that Lambda's retry from it archives
// it first in its batch. Every removal ends up archived once, and a reader
// asking for one type gets its removals only, though both share the
// partition.
func TestArchiverRefusesCollidingTypes(t *testing.T) {
	restore := objstoretest.SetNameHash(t, func(string) [sha256.Size]byte { return [sha256.Size]byte{0xc0, 0x11} })
	defer restore()
	a, b := strings.Repeat("A", 250), strings.Repeat("B", 250)
	if archive.EntitySegment(a) != archive.EntitySegment(b) {
		t.Fatal("the injected hash does not make the types collide")
	}
	dir := t.TempDir()
	cfg, err := archiver.LoadConfig(vars(map[string]string{"ARCHIVE_DIR": dir}))
	if err != nil {
		t.Fatal(err)
	}
	p, err := archiver.New(cfg, &projections.Environment{}, objstore.NewDir(dir), quiet(), nil)
	if err != nil {
		t.Fatal(err)
	}
	recs := []string{ttlRemovalRecord(101, "A#1", a), ttlRemovalRecord(102, "B#1", b), ttlRemovalRecord(103, "A#2", a)}
	// Lambda's redelivery: from the reported record on, until none is.
	var reported []string
	for from := 0; from < len(recs); {
		out, err := p.Invoke(context.Background(), []byte(`{"Records":[`+strings.Join(recs[from:], ",")+`]}`))
		if err != nil {
			t.Fatal(err)
		}
		var resp struct {
			BatchItemFailures []struct{ ItemIdentifier string } `json:"batchItemFailures"`
		}
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatal(err)
		}
		if len(resp.BatchItemFailures) == 0 {
			break
		}
		seq := resp.BatchItemFailures[0].ItemIdentifier
		reported = append(reported, seq)
		next := slices.IndexFunc(recs, func(r string) bool { return strings.Contains(r, `"SequenceNumber":"`+seq+`"`) })
		if next <= from {
			t.Fatalf("the handler reported %s, which is not after the batch's start: no progress", seq)
		}
		from = next
	}
	if !slices.Equal(reported, []string{"102", "103"}) {
		t.Errorf("reported %v, want 102 (B after A) and then 103 (A after B)", reported)
	}
	arch := archive.Open(objstore.NewDir(dir), "")
	objs, _, err := arch.Objects(context.Background(), archive.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var firsts []string
	for _, o := range objs {
		firsts = append(firsts, o.FirstSeq)
		var types []string
		if err := arch.ReadLines(context.Background(), o.Key, func(_ int, line []byte) error {
			var l struct {
				Item struct{ EntityType struct{ S string } }
			}
			err := json.Unmarshal(line, &l)
			types = append(types, l.Item.EntityType.S)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(types, a) && slices.Contains(types, b) {
			t.Errorf("object %s holds both types", o.Key)
		}
	}
	if !slices.Equal(firsts, []string{"101", "102", "103"}) {
		t.Errorf("objects named %v, want one for each record", firsts)
	}
	// A reader of one type gets its lines only.
	sel, err := arch.Select(context.Background(), archive.Filter{Entity: a}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sel.Items() != 2 || arch.Skipped() != 1 {
		t.Errorf("selecting A: %d items, %d left out; want A's 2, B's one left out", sel.Items(), arch.Skipped())
	}
}
