//go:build !unix

package warcs3

import "os"

// lockFile does not lock where flock is missing: one archiver per spool is then the
// user's to ensure.
func lockFile(*os.File) error { return nil }
