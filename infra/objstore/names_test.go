package objstore_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/infra/objstore/objstoretest"
)

// Collision is the pair of entity types in testdata/fitname-collision-64.json:
// two names with one 64-bit shortened name (see internal/cmd/fitcollide).
type Collision struct {
	Source     string   `json:"source"`
	Rebuild    string   `json:"rebuild"`
	Names      []string `json:"names"`
	OldFitName string   `json:"oldFitName"`
}

func loadCollision(t *testing.T) Collision {
	t.Helper()
	b, err := os.ReadFile("testdata/fitname-collision-64.json")
	if err != nil {
		t.Fatal(err)
	}
	var c Collision
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Names) != 2 || c.Names[0] == c.Names[1] {
		t.Fatalf("the fixture holds %d names, want two different ones", len(c.Names))
	}
	return c
}

// TestFitNameFixtureCollision: the two entity types found by the search
// have one SHA-256 prefix of 64 bits, so the shortened names of earlier
// versions (LegacyFitName) were one name for both; FitName keeps the whole
// hash and gives them two.
func TestFitNameFixtureCollision(t *testing.T) {
	c := loadCollision(t)
	a, b := c.Names[0], c.Names[1]
	if len(a) != 296 || len(b) != 296 {
		t.Errorf("the names are %d and %d bytes, want 296", len(a), len(b))
	}
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	if !bytes.Equal(ha[:8], hb[:8]) {
		t.Fatalf("the fixture's names do not collide in 64 bits: %x, %x", ha[:8], hb[:8])
	}
	for _, f := range []struct {
		prefix string
		max    int
	}{{"entity=", objstore.MaxSegmentBytes}, {"", 200}} {
		la, lb := objstore.LegacyFitName(f.prefix, a, "", f.max), objstore.LegacyFitName(f.prefix, b, "", f.max)
		if la != lb || la != f.prefix+c.OldFitName {
			t.Errorf("LegacyFitName: %q and %q, want both %q", la, lb, f.prefix+c.OldFitName)
		}
		na, nb := objstore.FitName(f.prefix, a, "", f.max), objstore.FitName(f.prefix, b, "", f.max)
		if na == nb {
			t.Errorf("FitName gives both %q", na)
		}
		if !objstore.IsHashed(strings.TrimPrefix(na, f.prefix)) || !objstore.IsLegacyHashed(strings.TrimPrefix(la, f.prefix)) {
			t.Errorf("IsHashed(%q) or IsLegacyHashed(%q) is false", na, la)
		}
	}
}

// TestNames: a record of names refuses a second name for one fitted name,
// and takes the same one again.
func TestNames(t *testing.T) {
	n := objstore.NewNames("entity types")
	long := strings.Repeat("Order", 60)
	for _, step := range []struct {
		fitted, name string
		refused      bool
	}{
		{"entity=Order", "Order", false},
		{"entity=Order", "Order", false},
		{"entity=_sha256-x", long + "A", false},
		{"entity=_sha256-x", long + "A", false},
		{"entity=_sha256-x", long + "B", true},
		{"entity=Order", "Other", true},
	} {
		err := n.Add(step.fitted, step.name)
		if (err != nil) != step.refused {
			t.Fatalf("Add(%q, %.20q…) = %v, refused %t", step.fitted, step.name, err, step.refused)
		}
		if err == nil {
			continue
		}
		var ce *objstore.NameCollisionError
		if !errors.Is(err, objstore.ErrNameCollision) || !errors.As(err, &ce) || ce.Fitted != step.fitted || ce.Second != step.name {
			t.Errorf("Add: %v (%#v), want a NameCollisionError of %q", err, ce, step.fitted)
		}
		if !strings.Contains(err.Error(), "entity types") || !strings.Contains(err.Error(), step.fitted) {
			t.Errorf("the error does not say what collided: %v", err)
		}
	}
	// Two long names that begin alike are told apart in the message.
	err := n.Add("entity=_sha256-x", long+"C")
	if msg := err.Error(); strings.Count(msg, "301 bytes") != 2 || strings.Count(msg, "SHA-256 ") != 2 {
		t.Errorf("the error does not tell the names apart: %v", err)
	}
}

// TestSetNameHash: an injected hash makes two names collide, and the
// returned function restores SHA-256.
func TestSetNameHash(t *testing.T) {
	long := strings.Repeat("x", 300)
	real := objstore.FitName("entity=", long+"A", "", objstore.MaxSegmentBytes)
	restore := objstoretest.SetNameHash(t, func(string) [sha256.Size]byte { return [sha256.Size]byte{0xab} })
	a, b := objstore.FitName("entity=", long+"A", "", objstore.MaxSegmentBytes), objstore.FitName("entity=", long+"B", "", objstore.MaxSegmentBytes)
	restore()
	if a != b || a != "entity="+objstore.HashMark+"ab"+strings.Repeat("0", 62) {
		t.Errorf("with the injected hash: %q and %q", a, b)
	}
	if again := objstore.FitName("entity=", long+"A", "", objstore.MaxSegmentBytes); again != real {
		t.Errorf("after restore: %q, want %q", again, real)
	}
	if got := objstore.FitName("entity=", "Order", "", objstore.MaxSegmentBytes); got != "entity=Order" {
		t.Errorf("a name that fits: %q", got)
	}
}
