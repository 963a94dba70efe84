package export

import (
	"context"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/pipeline"
)

// Items streams the items of a full export with an overlay applied (nil:
// none): every item as of the end of the last incremental export. Data
// files are read one after the other; fn must not keep the item past the
// call if it modifies it.
func Items(ctx context.Context, full *Export, overlay *Overlay, opts pipeline.Options, skipMD5 bool, fn func(pipeline.Item) error) error {
	if overlay == nil {
		overlay = &Overlay{}
	}
	if len(overlay.KeyAttributes) > 0 {
		opts.KeyAttributes = overlay.KeyAttributes
	}
	dec := pipeline.NewExportDecoder(opts)
	seen := map[string]bool{}
	files := append([]DataFile(nil), full.Files...)
	sortFiles(files)
	for _, f := range files {
		name := objstore.Name(full.store, full.DataKey(f))
		_, err := full.ReadLines(ctx, f, skipMD5, func(line []byte, n int) error {
			c, err := DecodeItem(dec, line, name, n)
			if err != nil {
				return err
			}
			item := c.New
			if overlay.Len() > 0 {
				key := overlay.KeyOf(item)
				if ent, ok := overlay.Lookup(key); ok {
					seen[key] = true
					if ent.Item == nil {
						return nil
					}
					item = ent.Item
				}
			}
			return fn(item)
		})
		if err != nil {
			return err
		}
	}
	for _, ent := range overlay.Entries() {
		if !seen[ent.Key] && ent.Item != nil {
			if err := fn(ent.Item); err != nil {
				return err
			}
		}
	}
	return nil
}
