package ingest

import (
	"fmt"
	"slices"
	"strings"

	db "github.com/canonkb/canon/gen/db"
)

// supersedesCycleNotices says, for each group of documents whose supersedes
// edges make a cycle (edges: those on a cycle), the shortest cycle through the
// first of them by slug and who made its group's edges. The edges stay as the
// files declare them: which entry is wrong only the author knows, and refusing
// one would pick it by the order the files arrived in.
func supersedesCycleNotices(edges []db.EdgeSupersedesCyclesRow) []string {
	// Documents joined by an edge on a cycle are in the same cycle group.
	group := map[int64]int64{}
	var find func(int64) int64
	find = func(n int64) int64 {
		if p, ok := group[n]; ok && p != n {
			group[n] = find(p)
			return group[n]
		}
		group[n] = n
		return n
	}
	slug := map[int64]string{}
	for _, e := range edges {
		slug[e.FromNodeID], slug[e.ToNodeID] = e.FromSlug, e.ToSlug
		group[find(e.FromNodeID)] = find(e.ToNodeID)
	}
	byGroup := map[int64][]db.EdgeSupersedesCyclesRow{}
	for _, e := range edges {
		g := find(e.FromNodeID)
		byGroup[g] = append(byGroup[g], e)
	}
	var out []string
	for _, members := range byGroup {
		start := members[0].FromNodeID
		for _, e := range members {
			if e.FromSlug < slug[start] {
				start = e.FromNodeID
			}
		}
		var chain []string
		for _, n := range shortestCycle(members, start) {
			chain = append(chain, slug[n])
		}
		var declarers, made []string
		for _, e := range members {
			if e.DeclaredBy != "" {
				declarers = append(declarers, e.DeclaredBy)
			} else {
				made = append(made, fmt.Sprintf("%s -> %s made by canon canon supersede", e.FromSlug, e.ToSlug))
			}
		}
		slices.Sort(declarers)
		var by []string
		if declarers = slices.Compact(declarers); len(declarers) > 0 {
			by = append(by, "declared by "+strings.Join(declarers, ", "))
		}
		by = append(by, made...)
		out = append(out, fmt.Sprintf("supersedes cycle %s (%s): each document on it is superseded by another one on it; "+
			"the links stay as declared: remove the supersedes entry that is wrong",
			strings.Join(chain, " -> "), strings.Join(by, "; ")))
	}
	slices.Sort(out)
	return out
}

// shortestCycle is a shortest walk over the edges from start back to it (start
// first and last), found breadth first; nil when there is none.
func shortestCycle(edges []db.EdgeSupersedesCyclesRow, start int64) []int64 {
	next := map[int64][]int64{}
	for _, e := range edges {
		next[e.FromNodeID] = append(next[e.FromNodeID], e.ToNodeID)
	}
	prev := map[int64]int64{start: start}
	for queue := []int64{start}; len(queue) > 0; queue = queue[1:] {
		n := queue[0]
		for _, m := range next[n] {
			if m == start {
				walk := []int64{start}
				for ; n != start; n = prev[n] {
					walk = append(walk, n)
				}
				walk = append(walk, start)
				slices.Reverse(walk)
				return walk
			}
			if _, seen := prev[m]; !seen {
				prev[m] = n
				queue = append(queue, m)
			}
		}
	}
	return nil
}
