package streams

import (
	"strconv"
	"testing"
)

// tagSlot is Redis's own slot of a hash tag: the values are what CLUSTER KEYSLOT of a
// redis-server 7.0 cluster node answered (a cluster test checks the placement itself).
func TestTagSlotIsRedisClusterKeySlot(t *testing.T) {
	for tag, want := range map[string]int{"shop:0": 6580, "shop:1": 2453, "shop:2~5": 15732, "big:17": 8051, "a": 15495, "": 0} {
		if got := tagSlot(tag); got != want {
			t.Errorf("tagSlot(%q) = %d, want %d", tag, got, want)
		}
	}
}

// Spread tags put partition i of p in the i-th of p equal ranges of the slots, so a
// cluster whose masters hold equal ranges in order holds p/masters partitions each;
// the tag is <crawl>:<i> itself when that already lies in its range.
func TestSpreadTagsLieInTheirRanges(t *testing.T) {
	for _, p := range []int{2, 3, 6, 24, 1024} {
		for _, crawl := range []string{"shop", "bench-broad", "x"} {
			seen := map[string]bool{}
			for i := range p {
				tag := spreadTag(crawl, i, p)
				slot := tagSlot(tag)
				if lo, hi := i*clusterSlots/p, (i+1)*clusterSlots/p; slot < lo || slot >= hi {
					t.Fatalf("%s partition %d of %d: tag %q in slot %d, not in [%d, %d)", crawl, i, p, tag, slot, lo, hi)
				}
				if base := crawl + ":" + strconv.Itoa(i); tag != base && tag[:len(base)+1] != base+"~" {
					t.Fatalf("%s partition %d: tag %q is not %q or %q~N", crawl, i, tag, base, base)
				}
				if seen[tag] {
					t.Fatalf("%s: tag %q twice", crawl, tag)
				}
				seen[tag] = true
			}
		}
	}
	// 3 partitions over 3 masters' equal ranges: one each.
	l := NewLayout("shop", 3)
	for i, k := range l.Parts {
		if got := tagSlot(k.Tag) * 3 / clusterSlots; got != i {
			t.Errorf("partition %d (%s) is in the third %d of the slots", i, k.Tag, got)
		}
	}
}
