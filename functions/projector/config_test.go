package main

import (
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/pipeline"
)

func TestLoadConfig(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := loadConfig(env(map[string]string{
		"AGGREGATE_TABLE": "aggs", "UNKNOWN_TYPE_POLICY": "fail", "PERMANENT_FAILURES": "skip",
		"IGNORE_TYPES": "User, Cart", "TOMBSTONE_TTL_DAYS": "30", "TYPE_ATTRIBUTE": "kind",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Table != "aggs" || c.Unknown != pipeline.FailUnknown || c.Permanent != pipeline.SkipPermanent ||
		strings.Join(c.Ignore, "|") != "User|Cart" || c.TombstoneTTL != 30*24*time.Hour || c.Decode.TypeAttribute != "kind" {
		t.Errorf("config %+v", c)
	}
	_, err = loadConfig(env(map[string]string{"UNKNOWN_TYPE_POLICY": "drop", "TOMBSTONE_TTL_DAYS": "x"}))
	for _, want := range []string{"AGGREGATE_TABLE is required", "UNKNOWN_TYPE_POLICY", "TOMBSTONE_TTL_DAYS"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not report %s", err, want)
		}
	}
}
