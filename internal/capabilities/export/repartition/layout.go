package repartition

// Output layout of a repartition, under the output location:
//
//	entity=<Type>/part-<source>-<seq>.json.gz   item lines, {"Item":{...}}, as ImportTable reads them
//	entity=<Type>/_manifest.json                that entity's parts, item counts, bytes and checksums
//	_parts/<source>.json                        one record per source data file: the unit of resume
//	_summary.json                               written last: its presence means the output is complete
const (
	SummaryKey   = "_summary.json"
	recordsDir   = "_parts/"
	manifestName = "_manifest.json"
	// overlaySource is the source ID of the items that incremental exports
	// add and the full export does not have.
	overlaySource = "_incremental"
	// FormatVersion is the version of the layout, in every record,
	// manifest and summary.
	FormatVersion = "tributary-repartition/1"
)

// PartInfo describes one output part.
type PartInfo struct {
	Key               string `json:"key"`
	Items             int64  `json:"itemCount"`
	Bytes             int64  `json:"bytes"`
	UncompressedBytes int64  `json:"uncompressedBytes"`
	// MD5 is the base64 MD5 of the object's bytes, as S3's Content-MD5 and
	// the export manifest's md5Checksum spell it.
	MD5 string `json:"md5Checksum"`
	// Entity is the entity type ("" for items without one).
	Entity string `json:"entity"`
}

// SourceRecord is written under _parts/ once every part of one source data
// file is committed. It is the unit of resume.
type SourceRecord struct {
	Version     string `json:"version"`
	Fingerprint string `json:"fingerprint"`
	SourceID    string `json:"sourceId"`
	// Source is the data file's key in the export's store.
	Source            string `json:"source"`
	Lines             int64  `json:"lines"`
	CompressedBytes   int64  `json:"compressedBytes"`
	UncompressedBytes int64  `json:"uncompressedBytes"`
	MD5               string `json:"md5Checksum,omitempty"`
	ItemsOut          int64  `json:"itemsOut"`
	// Dropped counts items a transform dropped; Added, extra items a
	// transform split off.
	Dropped int64 `json:"dropped"`
	Added   int64 `json:"added"`
	// Overlay counts: items replaced by a newer image, items deleted, and
	// (for OverlaySource) items inserted.
	Replaced int64 `json:"overlayReplaced"`
	Deleted  int64 `json:"overlayDeleted"`
	Inserted int64 `json:"overlayInserted"`
	// OverlayKeys are the keys of this file's items that the overlay
	// touched (so that a resumed run knows which overlay items are new).
	OverlayKeys []string   `json:"overlayKeys,omitempty"`
	Parts       []PartInfo `json:"parts"`
}

// EntityManifest is entity=<Type>/_manifest.json.
type EntityManifest struct {
	Version string `json:"version"`
	// Entity is the entity type ("" for UnknownEntity); Segment its
	// partition, "entity=<encoded type>".
	Entity  string `json:"entity"`
	Segment string `json:"segment"`
	// ImportPrefix is the key prefix, below the output location, that
	// matches exactly this entity's parts: the S3KeyPrefix for ImportTable.
	ImportPrefix      string      `json:"importPrefix"`
	Compression       Compression `json:"compression"`
	ItemCount         int64       `json:"itemCount"`
	Bytes             int64       `json:"bytes"`
	UncompressedBytes int64       `json:"uncompressedBytes"`
	Parts             []PartInfo  `json:"parts"`
	// PartsSHA256 is the hex SHA-256 of the lines "key md5 itemCount\n" of
	// the parts in key order: one checksum for the entity's whole content.
	PartsSHA256 string `json:"partsSha256"`
}

// RunSummary is _summary.json, written last.
type RunSummary struct {
	Version     string `json:"version"`
	Fingerprint string `json:"fingerprint"`
	Source      struct {
		Location  string `json:"location"`
		ExportARN string `json:"exportArn,omitempty"`
		ExportID  string `json:"exportId"`
		TableARN  string `json:"tableArn,omitempty"`
		Time      string `json:"exportTime,omitempty"`
		ItemCount int64  `json:"itemCount"`
		DataFiles int    `json:"dataFiles"`
		Manifest  string `json:"manifestSha256"`
	} `json:"source"`
	Incrementals  []string        `json:"incrementals,omitempty"`
	TypeAttribute string          `json:"typeAttribute"`
	Transform     string          `json:"transform,omitempty"`
	Compression   Compression     `json:"compression"`
	Entities      []EntitySummary `json:"entities"`
	Totals        struct {
		SourceItems       int64 `json:"sourceItems"`
		OutputItems       int64 `json:"outputItems"`
		CompressedBytes   int64 `json:"sourceCompressedBytes"`
		UncompressedBytes int64 `json:"sourceUncompressedBytes"`
		OutputBytes       int64 `json:"outputBytes"`
		Dropped           int64 `json:"dropped"`
		Added             int64 `json:"added"`
		Replaced          int64 `json:"overlayReplaced"`
		Deleted           int64 `json:"overlayDeleted"`
		Inserted          int64 `json:"overlayInserted"`
		OrphansRemoved    int   `json:"orphansRemoved"`
	} `json:"totals"`
	Finished string `json:"finished"`
}

func recordKey(id string) string { return recordsDir + id + ".json" }

// EntitySummary is one entity type's line of the summary: its manifest,
// with the checksum that reimport checks it against, and its totals.
type EntitySummary struct {
	Entity            string `json:"entity"`
	Segment           string `json:"segment"`
	Manifest          string `json:"manifest"`
	ManifestSHA256    string `json:"manifestSha256"`
	ItemCount         int64  `json:"itemCount"`
	Parts             int    `json:"parts"`
	Bytes             int64  `json:"bytes"`
	UncompressedBytes int64  `json:"uncompressedBytes"`
}
