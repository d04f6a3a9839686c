package processorstest_test

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/processors/processorstest"
	"github.com/streamcrawl/streamcrawl/spiders"
)

// The minimal sink of the example passes the suite.
func TestMemSink(t *testing.T) {
	processorstest.TestSink(t, memFeatures, newMemTarget)
}

// flawedTarget is the target of flawedSink: its records in the order written.
type flawedTarget struct {
	mu      sync.Mutex
	records []processorstest.Record
}

// newest returns the newest version of key the target holds, or -1.
func (tg *flawedTarget) newest(key string) int {
	v := -1
	for _, r := range tg.records {
		if r.Key == key {
			v = max(v, r.Version)
		}
	}
	return v
}

// flawedSink keeps the contract but for its flaw:
//
//   - "forgetful": it stores every item, known or not;
//   - "lazy": Store returns before the record is written (it is, 100ms later);
//   - "racy": it checks the key, then stores in a second step (check-then-set);
//   - "versionBlind": it dedups by key alone, so a new version is not stored;
//   - "olderAccepted": it dedups by key and version, so a late older version is stored
//     (as the file sinks do, yet it declares OlderVersionsRefused);
//   - "amnesiac": it remembers only the keys it stored itself, not those a sink
//     before it stored on the target.
type flawedSink struct {
	flaw   string
	target *flawedTarget
	mine   map[string]int // amnesiac's newest version by key
	wg     sync.WaitGroup
}

func (s *flawedSink) Store(ctx context.Context, it *spiders.Item) (bool, error) {
	key := it.Key()
	rec := processorstest.Record{Key: key, Version: it.Version, Type: it.Type, URL: it.URL, Fields: maps.Clone(it.Fields)}
	tg := s.target
	tg.mu.Lock()
	defer tg.mu.Unlock()
	newest := tg.newest(key)
	switch s.flaw {
	case "forgetful":
		newest = -1
	case "amnesiac":
		v, ok := s.mine[key]
		if !ok {
			v = -1
		}
		newest = v
		s.mine[key] = max(v, it.Version)
	case "versionBlind":
		if newest >= 0 {
			return false, nil
		}
	case "olderAccepted":
		if slices.ContainsFunc(tg.records, func(r processorstest.Record) bool { return r.Key == key && r.Version == it.Version }) {
			return false, nil
		}
		newest = -1
	}
	if newest >= it.Version {
		return false, nil
	}
	switch s.flaw {
	case "lazy":
		s.wg.Go(func() {
			time.Sleep(100 * time.Millisecond)
			tg.mu.Lock()
			defer tg.mu.Unlock()
			tg.records = append(tg.records, rec)
		})
		return true, nil
	case "racy":
		tg.mu.Unlock()
		time.Sleep(time.Millisecond) // the other caller checks meanwhile
		tg.mu.Lock()
	}
	tg.records = append(tg.records, rec)
	return true, nil
}

func (s *flawedSink) Close(context.Context) error {
	s.wg.Wait()
	return nil
}

// runFlawedSinks runs the suite on the flawed sinks: what TestSuiteFindsFlaws does in
// the child process it starts (its failures are the point, so they are the child's).
func runFlawedSinks(t *testing.T) {
	for _, flaw := range []string{"forgetful", "lazy", "racy", "versionBlind", "olderAccepted", "amnesiac"} {
		t.Run(flaw, func(t *testing.T) {
			processorstest.TestSink(t, memFeatures, func(*testing.T) processorstest.SinkTarget {
				target := &flawedTarget{}
				return processorstest.SinkTarget{
					Open: func(*testing.T) processorstest.Sink {
						return &flawedSink{flaw: flaw, target: target, mine: map[string]int{}}
					},
					ReadBack: func(*testing.T) []processorstest.Record {
						target.mu.Lock()
						defer target.mu.Unlock()
						return slices.Clone(target.records)
					},
				}
			})
		})
	}
}

// The suite fails each flawed sink in the cases that its flaw breaks, and passes it
// in some that it does not.
func TestSuiteFindsFlaws(t *testing.T) {
	if os.Getenv("PROCESSORSTEST_FLAWED") != "" {
		runFlawedSinks(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSuiteFindsFlaws$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "PROCESSORSTEST_FLAWED=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the suite passed every flawed sink:\n%s", out)
	}
	for _, c := range []struct {
		flaw       string
		fail, pass []string
	}{
		{"forgetful", []string{"StoreAgain", "ConcurrentDuplicates", "MissingKey", "RedeliveryAfterCrash", "Versions"}, []string{"StoreOnce", "CloseFlushes"}},
		{"lazy", []string{"StoreOnce", "RedeliveryAfterCrash"}, nil},
		{"racy", []string{"ConcurrentDuplicates"}, []string{"StoreOnce", "StoreAgain"}},
		{"versionBlind", []string{"Versions"}, []string{"StoreOnce", "ConcurrentDuplicates", "RedeliveryAfterCrash"}},
		{"olderAccepted", []string{"OlderVersionLate"}, []string{"StoreOnce", "Versions"}},
		{"amnesiac", []string{"RedeliveryAfterCrash", "ReopenAfterClose"}, []string{"StoreOnce", "ConcurrentDuplicates"}},
	} {
		for _, name := range c.fail {
			if line := "--- FAIL: TestSuiteFindsFlaws/" + c.flaw + "/" + name + " "; !strings.Contains(string(out), line) {
				t.Errorf("the %s sink did not fail %s", c.flaw, name)
			}
		}
		for _, name := range c.pass {
			if line := "--- PASS: TestSuiteFindsFlaws/" + c.flaw + "/" + name + " "; !strings.Contains(string(out), line) {
				t.Errorf("the %s sink did not pass %s", c.flaw, name)
			}
		}
	}
	if t.Failed() {
		t.Logf("output of the flawed sinks' run:\n%s", out)
	}
}
