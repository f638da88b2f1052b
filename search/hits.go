package search

import "github.com/canonkb/canon/domain"

// HitsByChunk returns the chunk ids of res's primary and runner-up hits that
// keep accepts (nil: all), each once, and the hits of each chunk (a chunk can
// be a hit twice), for a statement that reads something of each chunk.
func HitsByChunk(res *domain.SearchResult, keep func(*domain.Hit) bool) (ids []int64, hits map[int64][]*domain.Hit) {
	hits = map[int64][]*domain.Hit{}
	for _, list := range [][]*domain.Hit{res.Primary, res.RunnerUp} {
		for _, h := range list {
			if keep != nil && !keep(h) {
				continue
			}
			if hits[h.ChunkID] == nil {
				ids = append(ids, h.ChunkID)
			}
			hits[h.ChunkID] = append(hits[h.ChunkID], h)
		}
	}
	return ids, hits
}
