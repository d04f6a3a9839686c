package processors

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// CSV is a sink that appends one row per item to a CSV file with a header row. It is
// idempotent like JSONL: at open it reads the keys of the rows already in the file from
// the _key column (and cuts a torn last row a crash may have left), and it skips items
// whose key is among the last 131,072 it has written (see JSONL; a new version of a key
// is appended, from the _version column). Concurrent Store calls share one write and
// one fsync (group commit).
//
// The columns are fixed by the header: those given to OpenCSV, or, when none are given,
// _key, _type, _url, _crawled_at and the sorted field names of the first item stored. A
// reopened file keeps the header it has. Fields that have no column are dropped and
// counted (DroppedFields). String values are written as they are, except that one
// starting with =, +, -, @, a tab, a carriage return or a single quote gets a leading
// single quote so that no spreadsheet takes it for a formula (see csvCell); missing and
// nil values are empty cells, other values JSON-encoded.
type CSV struct {
	file *appendFile[*csvReq]
	buf  bytes.Buffer // the writer's
	// header is published once it is durable in the file; until then the writer
	// encodes rows itself (it fixes the header from the first item).
	header atomic.Pointer[csvHeader]

	dropMu  sync.Mutex
	dropped map[string]int64
}

type csvReq struct {
	key     string
	rec     map[string]any
	row     []byte   // encoded row, or nil when the header was not known yet
	dropped []string // fields of rec without a column, when row is set
	done    chan error
	dup     bool
}

// csvHeader is the fixed column list of a file.
type csvHeader struct {
	cols  []string
	index map[string]int
	line  []byte // the encoded header row
}

// csvBaseColumns lead the header chosen from the first item.
var csvBaseColumns = []string{"_key", "_type", "_url", "_crawled_at"}

func newCSVHeader(cols []string) (*csvHeader, error) {
	h := &csvHeader{cols: cols, index: make(map[string]int, len(cols))}
	for i, c := range cols {
		if c == "" {
			return nil, fmt.Errorf("column %d has no name", i+1)
		}
		if _, ok := h.index[c]; ok {
			return nil, fmt.Errorf("column %q appears twice", c)
		}
		h.index[c] = i
	}
	if _, ok := h.index["_key"]; !ok {
		return nil, errors.New("no _key column")
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	_ = w.Write(cols)
	w.Flush()
	h.line = buf.Bytes()
	return h, nil
}

// headerFor returns the header chosen from the first item: the base columns and the
// item's other fields, sorted.
func headerFor(rec map[string]any) *csvHeader {
	cols := slices.Clone(csvBaseColumns)
	var fields []string
	for k := range rec {
		if !slices.Contains(csvBaseColumns, k) {
			fields = append(fields, k)
		}
	}
	slices.Sort(fields)
	h, _ := newCSVHeader(append(cols, fields...)) // names are unique and include _key
	return h
}

// rowEncoder holds the buffers of one row's encoding; encoders are pooled.
type rowEncoder struct {
	row, val bytes.Buffer
	csv      *csv.Writer
	json     *json.Encoder
	cells    []string
}

var rowEncoders = sync.Pool{New: func() any {
	e := &rowEncoder{}
	e.csv = csv.NewWriter(&e.row)
	e.json = json.NewEncoder(&e.val)
	e.json.SetEscapeHTML(false)
	return e
}}

// encode returns rec as a CSV row and the names of its fields that have no column.
func (h *csvHeader) encode(rec map[string]any) (row []byte, dropped []string, err error) {
	e := rowEncoders.Get().(*rowEncoder)
	defer rowEncoders.Put(e)
	e.cells = append(e.cells[:0], make([]string, len(h.cols))...)
	for k, v := range rec {
		i, ok := h.index[k]
		if !ok {
			dropped = append(dropped, k)
			continue
		}
		switch v := v.(type) {
		case nil:
		case string:
			e.cells[i] = csvCell(v) // a formula is not written as one: see csv_cell.go
		default:
			e.val.Reset()
			if err := e.json.Encode(v); err != nil {
				return nil, nil, fmt.Errorf("field %q: %w", k, err)
			}
			e.cells[i] = string(bytes.TrimSuffix(e.val.Bytes(), []byte("\n")))
		}
	}
	e.row.Reset()
	_ = e.csv.Write(e.cells) // writes to a bytes.Buffer cannot fail
	e.csv.Flush()
	return bytes.Clone(e.row.Bytes()), dropped, nil
}

// OpenCSV opens (or creates) the CSV file at path for appending. columns is the header
// of a new file (a missing _key column is put first, since the sink needs it to be
// idempotent); nil means the header is chosen from the first item. An existing file
// keeps its own header, whatever columns says.
func OpenCSV(path string, columns []string) (*CSV, error) {
	var want *csvHeader
	if columns != nil {
		cols := slices.Clone(columns)
		if !slices.Contains(cols, "_key") {
			cols = append([]string{"_key"}, cols...)
		}
		h, err := newCSVHeader(cols)
		if err != nil {
			return nil, fmt.Errorf("processors: csv columns: %w", err)
		}
		want = h
	}
	file, err := openAppendFile[*csvReq](path, keyWindowSize)
	if err != nil {
		return nil, err
	}
	s := &CSV{file: file, dropped: map[string]int64{}}
	if err := s.load(want); err != nil {
		_ = file.f.Close()
		return nil, err
	}
	file.start(s.write)
	return s, nil
}

// Columns returns the header of the file, or nil while it is not fixed yet (a new file
// opened without columns, before the first item).
func (s *CSV) Columns() []string {
	if h := s.header.Load(); h != nil {
		return slices.Clone(h.cols)
	}
	return nil
}

// DroppedFields returns, by field name, how many values were not written because the
// header has no column for them.
func (s *CSV) DroppedFields() map[string]int64 {
	s.dropMu.Lock()
	defer s.dropMu.Unlock()
	return maps.Clone(s.dropped)
}

// Store appends it unless an item with the same key (and version) is in the file.
func (s *CSV) Store(ctx context.Context, it *spiders.Item) (bool, error) {
	key := it.Key()
	rec := it.Record()
	rec["_key"] = key
	req := &csvReq{key: windowKey(key, it.Version), rec: rec, done: make(chan error, 1)}
	if h := s.header.Load(); h != nil {
		row, dropped, err := h.encode(rec)
		if err != nil {
			return false, fmt.Errorf("processors: encode item %q: %w", key, err)
		}
		req.row, req.dropped = row, dropped
	}
	if err := s.file.submit(ctx, req, req.done, "csv"); err != nil {
		return false, err
	}
	return !req.dup, nil
}

// write appends the new items of batch (and the header, if the file has none yet) with
// one write and one fsync, then answers all.
func (s *CSV) write(batch []*csvReq) {
	buf := &s.buf
	buf.Reset()
	h := s.header.Load()
	var newHeader *csvHeader
	var written []*csvReq
	keys := s.file.newBatch()
	for _, r := range batch {
		if keys.known(r.key) {
			r.dup = true
			continue
		}
		if h == nil { // the first item fixes the header
			h = headerFor(r.rec)
			newHeader = h
			buf.Write(h.line)
		}
		if r.row == nil {
			row, dropped, err := h.encode(r.rec)
			if err != nil {
				r.done <- fmt.Errorf("processors: encode item %q: %w", r.key, err)
				r.done = nil
				continue
			}
			r.row, r.dropped = row, dropped
		}
		keys.add(r.key)
		written = append(written, r)
		buf.Write(r.row)
	}
	var err error
	if buf.Len() > 0 {
		err = s.file.append(buf.Bytes())
		if err == nil {
			keys.commit()
			if newHeader != nil {
				s.header.Store(newHeader)
			}
			s.countDropped(written)
		}
	}
	for _, r := range batch {
		if r.done != nil {
			r.done <- err
		}
	}
}

func (s *CSV) countDropped(written []*csvReq) {
	s.dropMu.Lock()
	defer s.dropMu.Unlock()
	for _, r := range written {
		for _, name := range r.dropped {
			s.dropped[name]++
		}
	}
}

// Close stops the writer and closes the file.
func (s *CSV) Close(ctx context.Context) error {
	return s.file.close("csv", func(r *csvReq, err error) { r.done <- err })
}
