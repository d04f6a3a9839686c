package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The kinds of recorded run, the "kind" of a record file.
const (
	recordPeers  = "peers"
	recordBroad  = "broad"
	recordMemory = "memory"
)

// record is one benchmark run written by --record as JSON, for plots: what ran, under
// which conditions, and its results (the field of its kind).
type record struct {
	Kind       string        `json:"kind"`
	Conditions conditions    `json:"conditions"`
	Peers      *peersRecord  `json:"peers,omitempty"`
	Broad      *broadRecord  `json:"broad,omitempty"`
	Memory     *memoryRecord `json:"memory,omitempty"`
}

// conditions are what a recorded run ran under, read when the command started.
type conditions struct {
	Date       time.Time `json:"date"`
	GoVersion  string    `json:"go_version"`
	GOMAXPROCS int       `json:"gomaxprocs"`
	NumCPU     int       `json:"num_cpu"`
	Load       string    `json:"load_at_start"` // /proc/loadavg's 1, 5 and 15 minute averages ("" elsewhere)
	Args       []string  `json:"args"`          // the command and the flags it was given
}

// conditionsNow returns the conditions of cmd's run as it starts.
func conditionsNow(cmd *cobra.Command) conditions {
	args := []string{cmd.Name()}
	cmd.Flags().Visit(func(f *pflag.Flag) { args = append(args, "--"+f.Name+"="+f.Value.String()) })
	return conditions{Date: time.Now().UTC().Truncate(time.Second), GoVersion: runtime.Version(),
		GOMAXPROCS: runtime.GOMAXPROCS(0), NumCPU: runtime.NumCPU(), Load: loadAverage(), Args: args}
}

// loadAverage returns /proc/loadavg's three load averages, or "" where there is none.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// writeRecord writes r to path as indented JSON, making its directory.
func writeRecord(path string, r *record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}

// recordFile is a record read back with the file it came from.
type recordFile struct {
	Path string
	record
}

// readRecords reads every *.json record in dir, oldest first (by date, then name).
func readRecords(dir string) ([]recordFile, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []recordFile
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		r := recordFile{Path: p}
		if err := json.Unmarshal(b, &r.record); err != nil {
			return nil, fmt.Errorf("record %s: %w", p, err)
		}
		if (r.Kind == recordPeers && r.Peers == nil) || (r.Kind == recordBroad && r.Broad == nil) ||
			(r.Kind == recordMemory && r.Memory == nil) {
			return nil, fmt.Errorf("record %s: kind %q without its results", p, r.Kind)
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b recordFile) int {
		return cmp.Or(a.Conditions.Date.Compare(b.Conditions.Date), cmp.Compare(a.Path, b.Path))
	})
	return out, nil
}

// recordName is the file name figures gives a run of kind recorded at t, with an
// optional part between (the host count of a broad run): kind[-part]-20060102T150405Z.json.
func recordName(kind, part string, t time.Time) string {
	if part != "" {
		kind += "-" + part
	}
	return kind + "-" + t.UTC().Format("20060102T150405Z") + ".json"
}
