package spec_test

import (
	"testing"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/seed"
	"github.com/tributary/tributary/projections/spec"
)

// BenchmarkLoadSeedSpec measures loading the stock spec: parsing the YAML,
// validating it and compiling its expressions — what a function does at
// init.
func BenchmarkLoadSeedSpec(b *testing.B) {
	for b.Loop() {
		if _, err := spec.Parse("seed.yaml", seed.SpecYAML); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkContribute compares the Go seed projections with their spec
// twins over the demo workload's images, one sub-benchmark each, so that
// -count interleaves the rounds: ns/op is per image.
func BenchmarkContribute(b *testing.B) {
	images, err := seedImages()
	if err != nil {
		b.Fatal(err)
	}
	type work struct {
		p    projections.Projection
		imgs []pipeline.Item
	}
	var goWork, specWork []work
	for _, pr := range pairs(b) {
		var imgs []pipeline.Item
		for _, et := range pr.goP.EntityTypes() {
			imgs = append(imgs, images[et]...)
		}
		goWork = append(goWork, work{pr.goP, imgs})
		specWork = append(specWork, work{pr.specP, imgs})
	}
	for _, side := range []struct {
		name string
		ws   []work
	}{{"go", goWork}, {"spec", specWork}} {
		b.Run(side.name, func(b *testing.B) {
			var n int
			b.ReportAllocs()
			for b.Loop() {
				for _, w := range side.ws {
					for _, img := range w.imgs {
						if _, err := w.p.Contribute(img); err != nil {
							b.Fatal(err)
						}
						n++
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/image")
		})
	}
}
