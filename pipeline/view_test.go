package pipeline_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tributary/tributary/pipeline"
)

// Every view type's records decode, each change saying its view type.
func TestViewTypesDecode(t *testing.T) {
	tests := []struct {
		file string
		view pipeline.View
	}{
		{"streams/view-keys-only.json", pipeline.ViewKeysOnly},
		{"streams/view-new-image.json", pipeline.ViewNewImage},
		{"streams/view-old-image.json", pipeline.ViewOldImage},
		{"streams/view-new-and-old-images.json", pipeline.ViewNewAndOldImages},
	}
	for _, tt := range tests {
		t.Run(tt.view.String(), func(t *testing.T) {
			changes, err := pipeline.DecodeStreamsEvent(read(t, tt.file), pipeline.Options{})
			if err != nil || len(changes) != 3 {
				t.Fatalf("%d changes, %v", len(changes), err)
			}
			for _, c := range changes {
				if c.View != tt.view {
					t.Errorf("%v change: view %v", c.Kind, c.View)
				}
				if (c.New != nil && c.View.Images()&pipeline.NewImages == 0) || (c.Old != nil && c.View.Images()&pipeline.OldImages == 0) {
					t.Errorf("%v change carries images its view type does not", c.Kind)
				}
			}
		})
	}
	changes, err := pipeline.DecodeKinesisEvent(read(t, "kinesis/event-ms.json"), pipeline.Options{})
	if err != nil || changes[0].View != pipeline.ViewNewAndOldImages {
		t.Errorf("a Kinesis destination's records carry both images: view %v, %v", changes[0].View, err)
	}
	_, err = pipeline.DecodeStreamsEvent([]byte(strings.Replace(string(read(t, "streams/view-new-image.json")), `"StreamViewType": "NEW_IMAGE"`, `"StreamViewType": "NEW_IMAGES"`, 1)), pipeline.Options{})
	if err == nil || !strings.Contains(err.Error(), `dynamodb.StreamViewType: unknown StreamViewType "NEW_IMAGES"`) {
		t.Errorf("unknown view type: %v", err)
	}
}

// needy is a handler that records what it handles and needs images.
type needy struct {
	need    pipeline.ImageNeed
	handled int
}

func (n *needy) HandleBatch(_ context.Context, changes []pipeline.Change) error {
	n.handled += len(changes)
	return nil
}
func (n *needy) ImageNeed() pipeline.ImageNeed { return n.need }

// Each consumer refuses, at the first record and before handling any, a
// stream whose view type cannot give it a correct result, saying which view
// type is needed: the projection engine needs new images (the ledger knows
// what a removed item contributed); the archiver old images of removals;
// the projector, whose filter criteria match removals by their old image,
// both.
func TestViewTypeRefused(t *testing.T) {
	engine := pipeline.ImageNeed{Images: pipeline.NewImages, Why: "new images"}
	archiver := pipeline.ImageNeed{Images: pipeline.OldImages, Why: "old images of removals"}
	filter := pipeline.ImageNeed{Images: pipeline.OldImages, Why: "the filter matches old images"}
	views := []string{"keys-only", "new-image", "old-image", "new-and-old-images"}
	tests := []struct {
		name    string
		handler pipeline.ImageNeed
		config  pipeline.ImageNeed
		ok      []string // the view types that work
		want    string   // what the refusal says is needed
	}{
		{"Engine", engine, pipeline.ImageNeed{}, []string{"new-image", "new-and-old-images"}, "NEW_IMAGE or NEW_AND_OLD_IMAGES is needed (new images)"},
		{"Archiver", archiver, pipeline.ImageNeed{}, []string{"old-image", "new-and-old-images"}, "OLD_IMAGE or NEW_AND_OLD_IMAGES is needed (old images of removals)"},
		{"FilteredProjector", engine, filter, []string{"new-and-old-images"}, "NEW_AND_OLD_IMAGES is needed ("},
		{"NoNeed", pipeline.ImageNeed{}, pipeline.ImageNeed{}, views, ""},
	}
	for _, tt := range tests {
		for _, view := range views {
			t.Run(tt.name+"/"+view, func(t *testing.T) {
				h := &needy{need: tt.handler}
				cfg := quietConfig()
				cfg.Need = tt.config
				res, err := pipeline.NewStreamsProcessor(h, cfg).Process(context.Background(), read(t, "streams/view-"+view+".json"))
				works := false
				for _, v := range tt.ok {
					works = works || v == view
				}
				if works {
					if err != nil || h.handled != 3 || res.Report != "" {
						t.Fatalf("handled %d, report %q, err %v", h.handled, res.Report, err)
					}
					return
				}
				var ve *pipeline.ViewError
				if !errors.As(err, &ve) || h.handled != 0 {
					t.Fatalf("handled %d, err %v; want a *ViewError and nothing handled", h.handled, err)
				}
				if ve.Index != 0 || errors.Is(err, pipeline.ErrPermanent) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "record 0 (seq 4421584500000000017450439091): the stream's view type is ") {
					t.Fatalf("error %v\nwant one at record 0, not permanent, saying %q", err, tt.want)
				}
			})
		}
	}
}
