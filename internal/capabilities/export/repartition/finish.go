package repartition

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/pipeline"
)

// finish checks that every data file is done, writes the items only the
// incremental exports have, removes parts no record claims (left by a
// crashed or different run), and writes each entity's manifest and then the
// summary; then it releases the output's claim.
func (r *Repartitioner) finish(ctx context.Context) (*RunSummary, error) {
	if err := r.hold(ctx); err != nil {
		return nil, err
	}
	recs, err := r.records(ctx)
	if err != nil {
		return nil, err
	}
	if r.overlay.Len() > 0 {
		rec, err := r.finishOverlay(ctx, recs)
		if err != nil {
			return nil, err
		}
		recs[overlaySource] = rec
	}
	// Reconcile with the source manifest.
	var lines int64
	for id, rec := range recs {
		if id != overlaySource {
			lines += rec.Lines
		}
	}
	if !r.src.NoManifest && lines != r.src.Summary.ItemCount {
		return nil, fmt.Errorf("repartition: read %d items from %s, but its manifest-summary.json says itemCount %d", lines, r.src, r.src.Summary.ItemCount)
	}
	claimed := map[string]PartInfo{}
	segs := objstore.NewNames("entity types")
	for _, rec := range recs {
		for _, p := range rec.Parts {
			claimed[p.Key] = p
			// One partition, one type: two types whose segments are one
			// hash would share a manifest that names one of them.
			if err := segs.Add(path.Dir(p.Key), p.Entity); err != nil {
				return nil, fmt.Errorf("repartition: %s: %w", r.out, err)
			}
		}
	}
	orphans, err := r.removeOrphans(ctx, claimed)
	if err != nil {
		return nil, err
	}
	s := r.newSummary(lines)
	if err := r.writeManifests(ctx, claimed, s); err != nil {
		return nil, err
	}
	for _, rec := range recs {
		s.Totals.CompressedBytes += rec.CompressedBytes
		s.Totals.UncompressedBytes += rec.UncompressedBytes
		s.Totals.Dropped += rec.Dropped
		s.Totals.Added += rec.Added
		s.Totals.Replaced += rec.Replaced
		s.Totals.Deleted += rec.Deleted
		s.Totals.Inserted += rec.Inserted
	}
	s.Totals.SourceItems = lines
	s.Totals.OrphansRemoved = orphans
	want := lines - s.Totals.Deleted - s.Totals.Dropped + s.Totals.Added + s.Totals.Inserted
	if s.Totals.OutputItems != want {
		return nil, fmt.Errorf("repartition: output holds %d items, want %d", s.Totals.OutputItems, want)
	}
	s.Finished = r.opts.Now().UTC().Format(time.RFC3339)
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := r.sweep(ctx); err != nil {
		return nil, err
	}
	if err := r.check(ctx); err != nil {
		return nil, err
	}
	if err := r.out.Put(ctx, SummaryKey, append(b, '\n')); err != nil {
		return nil, err
	}
	return s, r.release(ctx)
}

// records returns every data file's record, or an error when one is not
// done yet.
func (r *Repartitioner) records(ctx context.Context) (map[string]*SourceRecord, error) {
	recs := map[string]*SourceRecord{}
	var missing []string
	for key, id := range r.ids {
		rec, err := r.record(ctx, id)
		if err != nil {
			return nil, err
		}
		if rec == nil {
			missing = append(missing, key)
			continue
		}
		recs[id] = rec
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("repartition: %d of %d data files are not repartitioned yet, e.g. %s", len(missing), len(r.ids), missing[0])
	}
	return recs, nil
}

// removeOrphans deletes the parts no record claims and the manifests of
// entities that no longer have parts, and checks that every claimed part
// is there. It returns how many objects it deleted.
func (r *Repartitioner) removeOrphans(ctx context.Context, claimed map[string]PartInfo) (int, error) {
	var orphans []string
	present := map[string]bool{}
	entities := map[string]bool{}
	for _, p := range claimed {
		entities[path.Dir(p.Key)] = true
	}
	err := r.out.List(ctx, "entity=", func(o objstore.Object) error {
		base := path.Base(o.Key)
		switch {
		case strings.HasPrefix(base, "part-"):
			p, ok := claimed[o.Key]
			switch {
			case !ok:
				orphans = append(orphans, o.Key)
			case o.Size != p.Bytes:
				return fmt.Errorf("repartition: part %s is %d bytes, but its record says %d: another writer replaced it; rerun with --force", objstore.Name(r.out, o.Key), o.Size, p.Bytes)
			default:
				present[o.Key] = true
			}
		case base == manifestName && !entities[path.Dir(o.Key)]:
			orphans = append(orphans, o.Key)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for k := range claimed {
		if !present[k] {
			return 0, fmt.Errorf("repartition: part %s is recorded but missing from %s; rerun with --force", k, r.out)
		}
	}
	for _, k := range orphans {
		if err := r.out.Delete(ctx, k); err != nil {
			return 0, err
		}
	}
	return len(orphans), nil
}

// newSummary starts the run's summary: the source, the settings.
func (r *Repartitioner) newSummary(lines int64) *RunSummary {
	s := &RunSummary{Version: FormatVersion, Fingerprint: r.fingerprint, TypeAttribute: r.opts.Decode.TypeAttribute, Compression: r.opts.Compression}
	s.Source.Location = r.src.String()
	s.Source.ExportARN = r.src.Summary.ExportARN
	s.Source.ExportID = r.src.ID
	s.Source.TableARN = r.src.Summary.TableARN
	s.Source.Time = r.src.Summary.ExportTime
	s.Source.ItemCount = lines
	s.Source.DataFiles = len(r.ids)
	s.Source.Manifest = r.src.ManifestSHA256
	for _, e := range r.overlay.Exports {
		s.Incrementals = append(s.Incrementals, e.String())
	}
	if r.opts.Transform != nil {
		s.Transform = r.opts.Transform.Name
	}
	return s
}

// writeManifests writes each entity's manifest of the claimed parts and
// adds the entities to the summary.
func (r *Repartitioner) writeManifests(ctx context.Context, claimed map[string]PartInfo, s *RunSummary) error {
	byEntity := map[string][]PartInfo{}
	for _, p := range claimed {
		seg := path.Dir(p.Key)
		byEntity[seg] = append(byEntity[seg], p)
	}
	segs := make([]string, 0, len(byEntity))
	for seg := range byEntity {
		segs = append(segs, seg)
	}
	sort.Strings(segs)
	for _, seg := range segs {
		parts := byEntity[seg]
		sort.Slice(parts, func(i, j int) bool { return parts[i].Key < parts[j].Key })
		m := EntityManifest{Version: FormatVersion, Entity: parts[0].Entity, Segment: seg, ImportPrefix: seg + "/part-",
			Compression: r.opts.Compression, Parts: parts}
		h := sha256.New()
		for _, p := range parts {
			m.ItemCount += p.Items
			m.Bytes += p.Bytes
			m.UncompressedBytes += p.UncompressedBytes
			fmt.Fprintf(h, "%s %s %d\n", p.Key, p.MD5, p.Items)
		}
		m.PartsSHA256 = hex.EncodeToString(h.Sum(nil))
		b, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			return err
		}
		b = append(b, '\n')
		mkey := seg + "/" + manifestName
		if err := r.out.Put(ctx, mkey, b); err != nil {
			return err
		}
		mh := sha256.Sum256(b)
		s.Entities = append(s.Entities, EntitySummary{m.Entity, seg, mkey, hex.EncodeToString(mh[:]), m.ItemCount, len(parts), m.Bytes, m.UncompressedBytes})
		s.Totals.OutputItems += m.ItemCount
		s.Totals.OutputBytes += m.Bytes
	}
	return nil
}

// finishOverlay writes the overlay's items that no data file had: the items
// created during the incremental exports.
func (r *Repartitioner) finishOverlay(ctx context.Context, recs map[string]*SourceRecord) (*SourceRecord, error) {
	seen := map[string]bool{}
	for _, rec := range recs {
		for _, k := range rec.OverlayKeys {
			seen[k] = true
		}
	}
	w := r.newSourceWriter(ctx, overlaySource)
	rec := &SourceRecord{Version: FormatVersion, Fingerprint: r.fingerprint, SourceID: overlaySource, Source: "incremental exports"}
	var buf []byte
	for _, ent := range r.overlay.Entries() {
		if seen[ent.Key] || ent.Item == nil {
			continue
		}
		items := []pipeline.Item{ent.Item}
		if r.opts.Transform != nil {
			if fn := r.opts.Transform.ByType[ent.Type]; fn != nil {
				outs, err := fn(ent.Item)
				if err != nil {
					w.abort(err)
					return nil, fmt.Errorf("repartition: incremental item %s: transform %s: %w", ent.Key, r.opts.Transform.Name, err)
				}
				items = outs
				if len(outs) == 0 {
					rec.Dropped++
				} else {
					rec.Added += int64(len(outs) - 1)
				}
			}
		}
		rec.Inserted++
		for _, it := range items {
			t, err := r.typeOf(it)
			if err != nil {
				w.abort(err)
				return nil, err
			}
			buf = export.AppendItemLine(buf[:0], it)
			if err := w.add(t, buf); err != nil {
				w.abort(err)
				return nil, err
			}
		}
	}
	parts, err := w.close()
	if err != nil {
		return nil, err
	}
	if err := r.commitRecord(ctx, rec, parts); err != nil {
		return nil, err
	}
	return rec, nil
}
