package repartition

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

// processFile repartitions one data file (by its key in the export's store)
// and commits its record. A file already done under this fingerprint is
// skipped and its record returned (resumed is then true).
func (r *Repartitioner) processFile(ctx context.Context, dataKey string) (rec *SourceRecord, resumed bool, err error) {
	id, ok := r.ids[dataKey]
	if !ok {
		return nil, false, fmt.Errorf("repartition: %s is not a data file of %s", dataKey, r.src)
	}
	if err := r.hold(ctx); err != nil {
		return nil, false, err
	}
	if rec, err := r.record(ctx, id); err != nil || rec != nil {
		if rec != nil {
			r.count(func(rp *Report) { rp.Resumed++ })
		}
		return rec, rec != nil, err
	}
	f := r.files[dataKey]
	w := r.newSourceWriter(ctx, id)
	rec = &SourceRecord{Version: FormatVersion, Fingerprint: r.fingerprint, SourceID: id, Source: dataKey}
	name := objstore.Name(r.src.Store(), dataKey)
	dec := pipeline.NewExportDecoder(r.opts.Decode)
	sc := export.NewLineScanner(dec)
	overlay := r.overlay.Len() > 0
	var lineBuf []byte
	var pBytes, pItems int64
	stats, err := r.src.ReadLines(w.ctx, f, r.opts.SkipMD5, func(line []byte, n int) error {
		pBytes += int64(len(line)) + 1
		pItems++
		if pItems == 4096 && r.opts.Progress != nil {
			r.opts.Progress(pBytes, pItems)
			pBytes, pItems = 0, 0
		}
		if !overlay {
			typ, _, err := sc.Scan(line)
			if err != nil {
				return export.Corrupt(name, n, err)
			}
			if r.opts.Transform == nil || r.opts.Transform.ByType[string(typ)] == nil {
				return w.addBytes(typ, line)
			}
		}
		c, err := export.DecodeItem(dec, line, name, n)
		if err != nil {
			return err
		}
		item, typ, replaced := c.New, c.NewType, false
		if overlay {
			key := r.overlay.KeyOf(item)
			if ent, ok := r.overlay.Lookup(key); ok {
				rec.OverlayKeys = append(rec.OverlayKeys, key)
				if ent.Item == nil {
					rec.Deleted++
					return nil
				}
				item, typ, replaced = ent.Item, ent.Type, true
				rec.Replaced++
			}
		}
		fn := (projections.TransformFunc)(nil)
		if r.opts.Transform != nil {
			fn = r.opts.Transform.ByType[typ]
		}
		if fn == nil {
			if !replaced {
				return w.add(typ, line)
			}
			lineBuf = export.AppendItemLine(lineBuf[:0], item)
			return w.add(typ, lineBuf)
		}
		outs, err := fn(item)
		if err != nil {
			return &export.FileError{File: name, Line: n, Err: fmt.Errorf("transform %s: %w", r.opts.Transform.Name, err)}
		}
		switch {
		case len(outs) == 0:
			rec.Dropped++
		case len(outs) > 1:
			rec.Added += int64(len(outs) - 1)
		}
		for _, o := range outs {
			t, err := r.typeOf(o)
			if err != nil {
				return &export.FileError{File: name, Line: n, Err: fmt.Errorf("transform %s: %w", r.opts.Transform.Name, err)}
			}
			lineBuf = export.AppendItemLine(lineBuf[:0], o)
			if err := w.add(t, lineBuf); err != nil {
				return err
			}
		}
		return nil
	})
	if r.opts.Progress != nil && (pBytes > 0 || pItems > 0) {
		r.opts.Progress(pBytes, pItems)
	}
	if err != nil {
		if w.ctx.Err() != nil {
			err = context.Cause(w.ctx) // a pipe's failure, not the reader's
		}
		w.abort(err)
		return nil, false, err
	}
	parts, err := w.close()
	if err != nil {
		return nil, false, err
	}
	rec.Lines, rec.CompressedBytes, rec.UncompressedBytes, rec.MD5 = stats.Lines, stats.CompressedBytes, stats.UncompressedBytes, stats.MD5
	if err := r.commitRecord(ctx, rec, parts); err != nil {
		return nil, false, err
	}
	r.count(func(rp *Report) { rp.Done++ })
	return rec, false, nil
}

// typeOf returns the entity type of a transformed item.
func (r *Repartitioner) typeOf(item pipeline.Item) (string, error) {
	switch v := item[r.opts.Decode.TypeAttribute].(type) {
	case nil:
		return "", nil
	case *types.AttributeValueMemberS:
		return v.Value, nil
	}
	return "", fmt.Errorf("output item's %s is not a string", r.opts.Decode.TypeAttribute)
}

func (r *Repartitioner) commitRecord(ctx context.Context, rec *SourceRecord, parts []PartInfo) error {
	rec.Parts = parts
	for _, p := range parts {
		rec.ItemsOut += p.Items
	}
	want := rec.Lines - rec.Deleted - rec.Dropped + rec.Added + rec.Inserted
	if rec.ItemsOut != want {
		return fmt.Errorf("repartition: %s: wrote %d items, want %d (%d read, %d deleted, %d dropped, %d added, %d inserted)",
			rec.Source, rec.ItemsOut, want, rec.Lines, rec.Deleted, rec.Dropped, rec.Added, rec.Inserted)
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	if err := r.check(ctx); err != nil {
		return err
	}
	return r.out.Put(ctx, recordKey(rec.SourceID), append(b, '\n'))
}
