package changes

import "time"

// NextSerial is the SOA serial of a snapshot built after one with serial
// prev: the current Unix time, or prev+1 when changes come faster than
// once a second. Every published change takes one, so a secondary that
// polls the SOA transfers the zone again only when something changed.
func NextSerial(prev uint32) uint32 {
	now := uint32(time.Now().Unix())
	if now <= prev {
		return prev + 1
	}
	return now
}
