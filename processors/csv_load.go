package processors

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// load reads the header and indexes the keys of the rows in the file, cutting a torn last
// row. A file without a complete header row starts over: it gets want (when set) as its
// header, or the one chosen from the first item.
func (s *CSV) load(want *csvHeader) error {
	st, err := s.file.f.Stat()
	if err != nil {
		return fmt.Errorf("processors: %s: %w", s.file.path, err)
	}
	size := st.Size()
	lastNL := false
	if size > 0 {
		var b [1]byte
		if _, err := s.file.f.ReadAt(b[:], size-1); err != nil {
			return fmt.Errorf("processors: read %s: %w", s.file.path, err)
		}
		lastNL = b[0] == '\n'
	}
	good, err := s.scan(size, lastNL)
	if err != nil {
		return err
	}
	if err := s.file.cut(good); err != nil {
		return err
	}
	if good > 0 {
		return nil
	}
	if want != nil {
		if err := s.file.append(want.line); err != nil {
			return err
		}
		s.header.Store(want)
	}
	return nil
}

// scan reads the file from the start and returns the length of its good part: the
// header row and every complete row after it. A row is torn when the file ends in it
// without a newline, or inside a quoted cell; any other malformed row is an error.
func (s *CSV) scan(size int64, lastNL bool) (good int64, err error) {
	if _, err := s.file.f.Seek(0, io.SeekStart); err != nil {
		return 0, fmt.Errorf("processors: %s: %w", s.file.path, err)
	}
	r := csv.NewReader(bufio.NewReaderSize(s.file.f, 1<<20))
	r.ReuseRecord = true
	keyCol, versionCol := -1, -1
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return good, nil
		}
		atEnd := r.InputOffset() == size
		if atEnd && (!lastNL || errors.Is(err, csv.ErrQuote)) {
			return good, nil // torn last row: cut it
		}
		if err != nil {
			return 0, fmt.Errorf("processors: %s: not a csv file written by this sink: %w", s.file.path, err)
		}
		if keyCol < 0 {
			h, herr := newCSVHeader(slices.Clone(rec))
			if herr != nil {
				return 0, fmt.Errorf("processors: %s: header: %w", s.file.path, herr)
			}
			keyCol = h.index["_key"]
			if i, ok := h.index["_version"]; ok {
				versionCol = i
			}
			s.header.Store(h)
		} else {
			if rec[keyCol] == "" {
				line, _ := r.FieldPos(keyCol)
				return 0, fmt.Errorf("processors: %s:%d: row has no _key", s.file.path, line)
			}
			version := 0
			if versionCol >= 0 {
				version, _ = strconv.Atoi(rec[versionCol]) // empty for an item written unversioned
			}
			s.file.index(windowKey(rawCSVCell(rec[keyCol]), version))
		}
		good = r.InputOffset()
	}
}
