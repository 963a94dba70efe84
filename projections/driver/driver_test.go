package driver_test

import (
	"slices"
	"testing"

	"github.com/tributary/tributary/projections/driver"
)

// Rows order by projection, then partition, then sort key, as a Query of
// one partition reads them.
func TestRowRefCompare(t *testing.T) {
	want := []driver.RowRef{
		{Projection: "a", Partition: "P", Sort: "2"},
		{Projection: "b", Partition: "A", Sort: "9"},
		{Projection: "b", Partition: "B", Sort: "1"},
		{Projection: "b", Partition: "B", Sort: "10"},
		{Projection: "b", Partition: "B", Sort: "2"},
	}
	got := slices.Clone(want)
	slices.Reverse(got)
	slices.SortFunc(got, driver.RowRef.Compare)
	if !slices.Equal(got, want) {
		t.Errorf("sorted %v, want %v", got, want)
	}
	for i, r := range want {
		if c := r.Compare(r); c != 0 {
			t.Errorf("%v.Compare(itself) = %d", r, c)
		}
		if i > 0 && (want[i-1].Compare(r) != -1 || r.Compare(want[i-1]) != 1) {
			t.Errorf("%v and %v compare %d, %d", want[i-1], r, want[i-1].Compare(r), r.Compare(want[i-1]))
		}
	}
}
