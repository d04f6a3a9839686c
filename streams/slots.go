package streams

import "strconv"

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// tagSlot returns the Redis Cluster hash slot of the keys whose hash tag is tag:
// CRC16 (XMODEM: polynomial 0x1021, initial value 0) of tag, modulo 16384.
func tagSlot(tag string) int {
	var crc uint16
	for i := 0; i < len(tag); i++ {
		crc ^= uint16(tag[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % clusterSlots
}

// spreadTag returns the hash tag of partition i of p of crawl: <crawl>:<i> when its
// slot lies in the i-th of p equal ranges of the 16384 slots, else the first of
// <crawl>:<i>~1, <crawl>:<i>~2, ... whose slot does. A cluster whose masters hold equal
// ranges of slots in order (as redis-cli --cluster create makes it) then holds
// partitions/masters of them each: with as many partitions as masters, one each,
// where tags placed by their hash alone put two on one master 7 times in 9 (3 masters).
func spreadTag(crawl string, i, p int) string {
	lo, hi := i*clusterSlots/p, (i+1)*clusterSlots/p
	base := crawl + ":" + strconv.Itoa(i)
	for s := 0; ; s++ {
		tag := base
		if s > 0 {
			tag += "~" + strconv.Itoa(s)
		}
		if slot := tagSlot(tag); slot >= lo && slot < hi {
			return tag
		}
	}
}
