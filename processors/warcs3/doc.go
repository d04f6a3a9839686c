// Package warcs3 archives WARC files to S3-compatible object storage (AWS S3, MinIO,
// Ceph, R2...). The archiver writes its WARC files to a local spool directory exactly as
// it does without S3 (processors/warc); each file the writer closes is uploaded under a
// deterministic object key (<prefix>/<file name>), then its list of response record IDs
// (<prefix>/_index/<file name>.ids), and only then removed from the spool. An archiver
// restarted on the same spool uploads the files left there first (an upload cut short
// is made again under the same key: an overwrite, never a second copy) and loads the
// index objects so that it writes no page the bucket holds already.
package warcs3
