package seed_test

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/pipeline"
)

// fuzzAttrs are the attributes FuzzContribute sets: every attribute any seed
// projection reads, filled from the fuzzed strings.
var fuzzAttrs = []struct {
	name string
	from func(entityType, pk, sk, s1, s2, num string) types.AttributeValue
}{
	{"EntityType", func(et, _, _, _, _, _ string) types.AttributeValue { return s(et) }},
	{"PK", func(_, pk, _, _, _, _ string) types.AttributeValue { return s(pk) }},
	{"SK", func(_, _, sk, _, _, _ string) types.AttributeValue { return s(sk) }},
	{"season", func(_, _, _, s1, _, _ string) types.AttributeValue { return s(s1) }},
	{"orderDate", func(_, _, _, s1, _, _ string) types.AttributeValue { return s(s1) }},
	{"result", func(_, _, _, _, s2, _ string) types.AttributeValue { return s(s2) }},
	{"status", func(_, _, _, _, s2, _ string) types.AttributeValue { return s(s2) }},
	{"handle", func(_, _, _, _, s2, _ string) types.AttributeValue { return s(s2) }},
	{"score", func(_, _, _, _, _, num string) types.AttributeValue { return n(num) }},
	{"rating", func(_, _, _, _, _, num string) types.AttributeValue { return n(num) }},
	{"total", func(_, _, _, _, _, num string) types.AttributeValue { return n(num) }},
	{"quantity", func(_, _, _, _, _, num string) types.AttributeValue { return n(num) }},
	{"ttl", func(_, _, _, _, _, num string) types.AttributeValue { return n(num) }},
}

// fuzzItem builds an item from fuzzed inputs. Two bits of mask per attribute
// in fuzzAttrs choose: 0 the right type, 1 absent, 2 the other of S and N,
// 3 NULL. Bit 30 makes PK a nil member; bit 31 gives a nil item.
func fuzzItem(entityType, pk, sk, s1, s2, num string, mask uint32) pipeline.Item {
	if mask&(1<<31) != 0 {
		return nil
	}
	item := pipeline.Item{}
	for i, a := range fuzzAttrs {
		av := a.from(entityType, pk, sk, s1, s2, num)
		switch mask >> (2 * i) & 3 {
		case 0:
			item[a.name] = av
		case 2:
			switch v := av.(type) {
			case *types.AttributeValueMemberS:
				item[a.name] = n(v.Value)
			case *types.AttributeValueMemberN:
				item[a.name] = s(v.Value)
			}
		case 3:
			item[a.name] = &types.AttributeValueMemberNULL{Value: true}
		}
	}
	if mask&(1<<30) != 0 {
		item["PK"] = (*types.AttributeValueMemberS)(nil)
	}
	return item
}

// FuzzContribute checks that Contribute never panics, is deterministic (two
// calls give the same result), leaves the image alone, and either fails with
// a *projections.ItemError or returns a contribution the stores accept.
func FuzzContribute(f *testing.F) {
	// which picks the projection (which % 5) and its entity type.
	f.Add(uint8(0), "PLAYER#u8231", "MATCH#2026-05-01T18:30:00Z#m1001", "2026-Q2", "WIN", "12.5", uint32(0))
	f.Add(uint8(0), "PLAYER#u8231", "MATCH#2026-05-01T18:30:00Z#m1001", "2026-Q2", "DRAW", "-1E-130", uint32(0))
	f.Add(uint8(1), "PLAYER#u8231", "PROFILE", "2026-Q2", "nightowl", "1842", uint32(0))
	f.Add(uint8(1), "PLAYER#u8231", "PROFILE", "2026-Q2", "nightowl", "1842", uint32(3<<6))
	f.Add(uint8(1), "PLAYER#u8231", "PROFILE", "", "", "9.999999999E9", uint32(1<<6))
	f.Add(uint8(2), "WS#acme", "DOC#d42", "", "", "", uint32(0))
	f.Add(uint8(7), "WS#acme", "DOC#d42#CMT#c7", "", "", "1798761600", uint32(0))
	f.Add(uint8(3), "USER#u42", "ORDER#2026-11-30#o1", "2026-11-30", "PAID", "120.50", uint32(0))
	f.Add(uint8(3), "USER#u42", "ORDER#2026-11-30#o1", "2026-11-30", "PAID", "120.50", uint32(2<<12))
	f.Add(uint8(4), "CART#c9", "ITEM#p100", "", "", "3", uint32(0))
	f.Add(uint8(4), "CART#c9", "ITEM#p100", "", "", "3", uint32(1<<30))
	f.Add(uint8(4), "", "", "", "", "", uint32(1<<31))

	f.Fuzz(func(t *testing.T, which uint8, pk, sk, s1, s2, num string, mask uint32) {
		all := seed.All()
		p := all[int(which)%len(all)]
		ets := p.EntityTypes()
		et := ets[int(which)/len(all)%len(ets)]

		item := fuzzItem(et, pk, sk, s1, s2, num, mask)
		c, err := p.Contribute(item)
		first := render(c, err)
		if second := render(p.Contribute(item)); !bytes.Equal(first, second) {
			t.Fatalf("Contribute is not deterministic:\n%s\n%s", first, second)
		}
		if fresh := fuzzItem(et, pk, sk, s1, s2, num, mask); !reflect.DeepEqual(item, fresh) {
			t.Fatalf("Contribute modified its image")
		}
		if err != nil {
			checkItemError(t, p, err)
			if len(c.Counters) != 0 || len(c.Rows) != 0 {
				t.Fatalf("Contribute returned %s with an error", first)
			}
			return
		}
		checkContribution(t, c)
	})
}
