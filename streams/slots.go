package streams

import (
	"strconv"
	"sync"
)

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// tagSlot returns the Redis Cluster hash slot of the keys whose hash tag is tag:
// CRC16 (XMODEM: polynomial 0x1021, initial value 0) of tag, modulo 16384.
func tagSlot(tag string) int { return int(crc16(0, tag)) % clusterSlots }

// crc16 continues CRC16/XMODEM crc over s.
func crc16(crc uint16, s string) uint16 {
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// spreadTag returns the hash tag of partition i of p of crawl: <crawl>:<i> when its
// slot lies in the i-th of p equal ranges of the 16384 slots, else the first of
// <crawl>:<i>~1, <crawl>:<i>~2, ... whose slot does. A cluster whose masters hold equal
// ranges of slots in order (as redis-cli --cluster create makes it) then holds
// partitions/masters of them each: with as many partitions as masters, one each,
// where tags placed by their hash alone put two on one master 7 times in 9 (3 masters).
// It takes about p tries (the CRC of <crawl>:<i> is computed once, each try adds its
// suffix); spreadTags keeps a crawl's tags.
func spreadTag(crawl string, i, p int) string {
	lo, hi := i*clusterSlots/p, (i+1)*clusterSlots/p
	base := crawl + ":" + strconv.Itoa(i)
	crc := crc16(0, base)
	if slot := int(crc) % clusterSlots; slot >= lo && slot < hi {
		return base
	}
	for s := 1; ; s++ {
		suffix := "~" + strconv.Itoa(s)
		if slot := int(crc16(crc, suffix)) % clusterSlots; slot >= lo && slot < hi {
			return base + suffix
		}
	}
}

// spreadTagsOf keeps the spread tags of each crawl and partition count this process
// has laid out: a layout is read again and again (status, the dashboard's sampler every
// second), and 1,024 partitions take about a million tries.
var spreadTagsOf sync.Map // spreadKey -> []string

// spreadKey is a crawl and its partition count.
type spreadKey struct {
	crawl string
	p     int
}

// spreadTags returns the tags of the p partitions of crawl (spreadTag), computed once.
func spreadTags(crawl string, p int) []string {
	k := spreadKey{crawl, p}
	if tags, ok := spreadTagsOf.Load(k); ok {
		return tags.([]string)
	}
	tags := make([]string, p)
	for i := range tags {
		tags[i] = spreadTag(crawl, i, p)
	}
	spreadTagsOf.Store(k, tags)
	return tags
}
