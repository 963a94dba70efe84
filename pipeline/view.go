package pipeline

import (
	"fmt"
	"strings"

	"github.com/tributary/tributary/internal/quote"
)

// View is a stream's view type (StreamViewType): which images of a changed
// item its records carry. A table's stream has one, set when the stream is
// enabled; DynamoDB's Kinesis streaming destination always writes both
// images.
type View uint8

// The view types. viewUnknown is a record that does not say (a hand-written
// event, an export line).
const (
	viewUnknown         View = iota
	ViewKeysOnly             // KEYS_ONLY: the key attributes only
	ViewNewImage             // NEW_IMAGE: the item after the change
	ViewOldImage             // OLD_IMAGE: the item before the change
	ViewNewAndOldImages      // NEW_AND_OLD_IMAGES: both
)

// String returns the StreamViewType name, or "" for viewUnknown.
func (v View) String() string {
	switch v {
	case ViewKeysOnly:
		return "KEYS_ONLY"
	case ViewNewImage:
		return "NEW_IMAGE"
	case ViewOldImage:
		return "OLD_IMAGE"
	case ViewNewAndOldImages:
		return "NEW_AND_OLD_IMAGES"
	}
	return ""
}

func parseView(s string) (View, bool) {
	for v := ViewKeysOnly; v <= ViewNewAndOldImages; v++ {
		if v.String() == s {
			return v, true
		}
	}
	return viewUnknown, s == ""
}

// Images is a set of the images a change can carry.
type Images uint8

// The images.
const (
	NewImages Images = 1 << iota // the item after the change (NewImage)
	OldImages                    // the item before the change (OldImage)
)

// Images returns the images records of view type v carry; all of them for
// viewUnknown, which cannot be told to lack any.
func (v View) Images() Images {
	switch v {
	case ViewKeysOnly:
		return 0
	case ViewNewImage:
		return NewImages
	case ViewOldImage:
		return OldImages
	}
	return NewImages | OldImages
}

// viewsFor names the view types whose records carry every image of need.
func viewsFor(need Images) string {
	var out []string
	for v := ViewKeysOnly; v <= ViewNewAndOldImages; v++ {
		if v.Images()&need == need {
			out = append(out, v.String())
		}
	}
	return strings.Join(out, " or ")
}

// ImageNeed is what a consumer needs its stream's records to carry to give
// a correct result, and why, for the error that refuses a stream without.
type ImageNeed struct {
	Images Images
	Why    string
}

// imageNeeder is implemented by handlers that need images: the projection
// engine needs new images, the TTL archiver old ones. The Processor and the
// replay refuse a stream whose view type does not carry them.
type imageNeeder interface {
	ImageNeed() ImageNeed
}

// NeedOf returns what h needs, if it says (imageNeeder), or nothing.
func NeedOf(h any) ImageNeed {
	if n, ok := h.(imageNeeder); ok {
		return n.ImageNeed()
	}
	return ImageNeed{}
}

// ViewError refuses a stream whose view type cannot give a consumer a
// correct result: it names the record where that showed, the view type, the
// view types needed and why. It is not permanent: no record of the stream
// can be handled until its view type is changed.
type ViewError struct {
	Index          int // of the record in its batch
	SequenceNumber string
	View           View
	Need           Images
	Why            []string
}

func (e *ViewError) Error() string {
	return fmt.Sprintf("record %d (seq %s): the stream's view type is %s, which cannot give a correct result: %s is needed (%s); a stream's view type is set when it is enabled: disable the stream and enable it with %s",
		e.Index, quote.ID(e.SequenceNumber), e.View, viewsFor(e.Need), strings.Join(e.Why, "; "), viewsFor(e.Need))
}

// CheckViews returns the index in changes of the first change whose view
// type does not carry every image needs ask for, and a *ViewError, or -1
// and nil.
func CheckViews(changes []Change, needs ...ImageNeed) (int, error) {
	var all Images
	for _, n := range needs {
		all |= n.Images
	}
	if all == 0 {
		return -1, nil
	}
	for i := range changes {
		c := &changes[i]
		have := c.View.Images()
		if have&all == all {
			continue
		}
		var why []string
		for _, n := range needs {
			if have&n.Images != n.Images && n.Why != "" {
				why = append(why, n.Why)
			}
		}
		return i, &ViewError{Index: c.Position.Index, SequenceNumber: c.Position.SequenceNumber, View: c.View, Need: all, Why: why}
	}
	return -1, nil
}
