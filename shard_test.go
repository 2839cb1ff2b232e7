package idemcheck

import "testing"

// The parts of all shards add up to the whole, and their sequence numbers
// cover 1..N once each, as one process would number them.
func TestShardPartsAndSeqsCoverTheWhole(t *testing.T) {
	for _, count := range []int{1, 2, 3, 4, 7} {
		for _, total := range []int64{0, 1, 5, 100, 101, 1003} {
			var sum int64
			seen := map[int64]bool{}
			for i := range count {
				s := Shard{Index: i, Count: count}
				p := s.Part(total)
				sum += p
				for n := int64(1); n <= p; n++ {
					q := s.Seq(n)
					if seen[q] {
						t.Fatalf("%d shards, %d in all: seq %d twice (shard %s)", count, total, q, s)
					}
					seen[q] = true
				}
			}
			if sum != total {
				t.Errorf("%d shards: parts of %d add up to %d", count, total, sum)
			}
			for q := int64(1); q <= total; q++ {
				if !seen[q] {
					t.Errorf("%d shards, %d in all: seq %d taken by none", count, total, q)
				}
			}
		}
	}
}
