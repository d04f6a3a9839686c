package warc

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestFileNamesFoundAtOpenAreNotReused: a writer restarted within the second of a file
// its crashed predecessor left (what an S3 spool holds) must not name a new file like it,
// even after Closed has taken the old one away (uploaded and removed): the upload of the
// new file would replace the old one in the bucket and lose its pages. It did: the
// restarted archiver of TestArchiverKilledWritesEveryRecordOnce/s3-before-ack lost 21
// to 42 of 295 pages when its workers were fast enough to restart it in the same second.
func TestFileNamesFoundAtOpenAreNotReused(t *testing.T) {
	dir := t.TempDir()
	left := map[string]bool{}
	{ // the crashed writer's files: one per second from now on, numbers 1 to 3
		w, err := Open(dir, "arch-1", 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.WritePage(page(1)); err != nil {
			t.Fatal(err)
		}
		w.Close()
		files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
		if len(files) != 1 {
			t.Fatalf("%d files, want 1", len(files))
		}
		body, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		os.Remove(files[0])
		now := time.Now().UTC()
		for s := 0; s < 10; s++ {
			for n := 1; n <= 3; n++ {
				base := "arch-1-" + now.Add(time.Duration(s)*time.Second).Format("20060102150405") + "-0000" + string(rune('0'+n)) + ".warc.gz"
				left[base] = true
				if err := os.WriteFile(filepath.Join(dir, base), body, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	var made []string
	opened := false
	w, err := OpenWith(dir, "arch-1", Options{MaxFileSize: 400, Closed: func(f ClosedFile) {
		if opened { // the files found at open are handed over during OpenWith
			made = append(made, filepath.Base(f.Path))
		}
		os.Remove(f.Path) // taken away, as the spool's upload does
	}})
	if err != nil {
		t.Fatal(err)
	}
	opened = true
	for i := 2; i < 12; i++ {
		if _, err := w.WritePage(page(i)); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	if len(made) < 3 {
		t.Fatalf("%d new files for 10 pages at 400 bytes a file; want rotation", len(made))
	}
	for _, base := range made {
		if left[base] {
			t.Errorf("new file %s has the name of a file found at open", base)
		}
	}
}
