package processors

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/streamcrawl/streamcrawl/processors/processorstest"
)

// processorstest.Sink is processors.Sink declared again: the two must stay the same.
var (
	_ processorstest.Sink = Sink(nil)
	_ Sink                = processorstest.Sink(nil)
)

// fileSinkFeatures are what the JSONL and CSV sinks do: they append every new version
// of a key, so a version delivered late for the first time is appended too.
var fileSinkFeatures = processorstest.SinkFeatures{Reopen: true, Versions: true}

func TestJSONLContract(t *testing.T) {
	t.Parallel()
	processorstest.TestSink(t, fileSinkFeatures, func(t *testing.T) processorstest.SinkTarget {
		path := filepath.Join(t.TempDir(), "items.jsonl")
		return processorstest.SinkTarget{
			Open: func(t *testing.T) processorstest.Sink {
				s, err := OpenJSONL(path)
				if err != nil {
					t.Fatal(err)
				}
				return s
			},
			ReadBack: func(t *testing.T) []processorstest.Record { return readJSONL(t, path) },
		}
	})
}

func TestCSVContract(t *testing.T) {
	t.Parallel()
	processorstest.TestSink(t, fileSinkFeatures, func(t *testing.T) processorstest.SinkTarget {
		path := filepath.Join(t.TempDir(), "items.csv")
		return processorstest.SinkTarget{
			Open: func(t *testing.T) processorstest.Sink {
				s, err := OpenCSV(path, nil)
				if err != nil {
					t.Fatal(err)
				}
				return s
			},
			ReadBack: func(t *testing.T) []processorstest.Record { return readCSVRecords(t, path) },
		}
	})
}

func TestPostgresContract(t *testing.T) {
	t.Parallel()
	pg := processorstest.StartPostgres(t)
	db := dbPool(t, pg)
	var tables atomic.Int64
	features := processorstest.SinkFeatures{Reopen: true, Versions: true, OlderVersionsRefused: true}
	processorstest.TestSink(t, features, func(t *testing.T) processorstest.SinkTarget {
		table := fmt.Sprintf("contract_%d", tables.Add(1))
		return processorstest.SinkTarget{
			Open: func(t *testing.T) processorstest.Sink {
				s, err := OpenPostgres(t.Context(), PostgresConfig{URL: pg.URL(), Table: table})
				if err != nil {
					t.Fatal(err)
				}
				return s
			},
			ReadBack: func(t *testing.T) []processorstest.Record {
				rows, err := db.Query(t.Context(), "SELECT key, version, type, url, fields FROM "+table+" ORDER BY key")
				if err != nil {
					t.Fatal(err)
				}
				defer rows.Close()
				var recs []processorstest.Record
				for rows.Next() {
					var r processorstest.Record
					if err := rows.Scan(&r.Key, &r.Version, &r.Type, &r.URL, &r.Fields); err != nil {
						t.Fatal(err)
					}
					recs = append(recs, r)
				}
				if err := rows.Err(); err != nil {
					t.Fatal(err)
				}
				return recs
			},
		}
	})
}

// readJSONL returns the records of a JSONL sink's file; a missing file holds none.
func readJSONL(t *testing.T, path string) []processorstest.Record {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []processorstest.Record
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("%s: %v: %q", path, err, sc.Text())
		}
		recs = append(recs, recordOf(t, rec))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return recs
}

// readCSVRecords returns the records of a CSV sink's file, empty cells left out; a
// missing or empty file holds none.
func readCSVRecords(t *testing.T, path string) []processorstest.Record {
	t.Helper()
	if st, err := os.Stat(path); os.IsNotExist(err) || (err == nil && st.Size() == 0) {
		return nil
	}
	rows := readCSV(t, path)
	var recs []processorstest.Record
	for _, row := range rows[1:] {
		rec := map[string]any{}
		for i, cell := range row {
			if cell != "" {
				rec[rows[0][i]] = cell
			}
		}
		recs = append(recs, recordOf(t, rec))
	}
	return recs
}

// recordOf splits a record as the file sinks write it (spiders.Item.Record and _key)
// into the parts the suite compares.
func recordOf(t *testing.T, rec map[string]any) processorstest.Record {
	t.Helper()
	r := processorstest.Record{Fields: map[string]any{}}
	for k, v := range rec {
		s := fmt.Sprint(v)
		switch {
		case k == "_key":
			r.Key = s
		case k == "_type":
			r.Type = s
		case k == "_url":
			r.URL = s
		case k == "_version":
			n, err := strconv.Atoi(s)
			if err != nil {
				t.Fatalf("_version %q: %v", s, err)
			}
			r.Version = n
		case !strings.HasPrefix(k, "_"):
			r.Fields[k] = v
		}
	}
	return r
}
