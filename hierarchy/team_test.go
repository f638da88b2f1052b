package hierarchy

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/internal/dbtest"
)

// A small handbook of its own (not the example one): the storage team (Ana, Bo),
// the team's two meetings, a meeting Ana had with someone else, and three
// runbooks Ana owns at high retrieval priority (one says "discuss").
var storageHandbook = map[string]string{
	"storage/teams/storage-team.md": `---
id: storage-team
title: Storage team
type: team
members: [ana, bo]
role: Owns block storage and backups
project: storage
---

# Storage team

Runs the block storage fleet and the nightly backups.
`,
	"storage/people/ana.md": `---
id: ana
title: Ana Petrov
type: person
role: Storage engineer
project: storage
---

# Ana Petrov

Ana is a storage engineer.
`,
	"storage/people/bo.md": `---
id: bo
title: Bo Lindqvist
type: person
role: Backup engineer
project: storage
---

# Bo Lindqvist

Bo looks after the backups.
`,
	"storage/people/cy.md": `---
id: cy
title: Cy Okoro
type: person
role: Product manager
project: storage
---

# Cy Okoro

Cy is the product manager for billing.
`,
	"storage/meetings/2025-03-04-storage-sync.md": `---
id: mtg-storage-sync
title: Storage sync — 2025-03-04
attendees: [ana, bo]
tags: [meeting]
project: storage
date: 2025-03-04
source_type: meeting-notes
---

# Storage sync — 2025-03-04

## Discussion

Snapshot retention: thirty daily snapshots are enough; we agreed to drop the weekly ones.
`,
	"storage/meetings/2025-04-08-backup-review.md": `---
id: mtg-backup-review
title: Backup review — 2025-04-08
attendees: [bo, ana]
tags: [meeting, backups]
project: storage
date: 2025-04-08
source_type: meeting-notes
---

# Backup review — 2025-04-08

## Discussion

Restore drills took forty minutes; the restore tooling needs parallel downloads.
`,
	"storage/meetings/2025-05-12-billing-check-in.md": `---
id: mtg-billing-check-in
title: Billing check-in — 2025-05-12
attendees: [ana, cy]
tags: [meeting]
project: storage
date: 2025-05-12
source_type: meeting-notes
---

# Billing check-in — 2025-05-12

Storage costs per customer for the billing export.
`,
	"storage/runbooks/rb-disk-full.md": `---
id: rb-disk-full
title: Disk full on a storage node
type: runbook
status: active
retrieval_priority: 95
owners: [ana]
project: storage
---

# Disk full on a storage node

Tell the on-call lead before deleting anything. Steps: find the largest volumes, move
cold data to the archive tier, and discuss the cleanup in the incident channel.
`,
	"storage/runbooks/rb-restore.md": `---
id: rb-restore
title: Restore a volume from backup
type: runbook
status: active
retrieval_priority: 95
owners: [ana]
project: storage
---

# Restore a volume from backup

Settle the restore point with the volume's owner. Steps: pick the snapshot, restore to a
new volume and swap it in.
`,
	"storage/runbooks/rb-node-replace.md": `---
id: rb-node-replace
title: Replace a failed storage node
type: runbook
status: active
retrieval_priority: 95
owners: [ana]
project: storage
---

# Replace a failed storage node

Steps: drain the node, wait for the rebalancing, replace it.
`,
}

func storageSearcher(t *testing.T) *Searcher {
	t.Helper()
	p := dbtest.FreshPool(t)
	var files []ingest.File
	for path, content := range storageHandbook {
		files = append(files, ingest.File{Path: path, Content: []byte(content)})
	}
	slices.SortFunc(files, func(a, b ingest.File) int { return strings.Compare(a.Path, b.Path) })
	res, err := newIngester(p).Ingest(context.Background(), files, ingest.Options{Project: "storage"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Fatalf("storage handbook has invalid files: %v", res.Errors)
	}
	return New(p, flatSearcher(p), DefaultConfig())
}

func storageReq(q string) *domain.SearchRequest {
	return &domain.SearchRequest{
		Query: q, Filters: domain.RawFilters{ProjectKeys: []string{"storage"}},
		Options: domain.SearchOptions{Limit: 10, Explain: true},
	}
}

// TestTeamQuestionRanksTheTeamsMeetings: "what did the storage team discuss?"
// ranks the team's own meetings above its member's high-priority runbooks (which
// say "discuss" more often), through the team's member_meeting links and the
// meeting intent; the explanation names the intent signal.
func TestTeamQuestionRanksTheTeamsMeetings(t *testing.T) {
	t.Parallel()
	h := storageSearcher(t)
	for _, q := range []string{"What did the storage team discuss?", "what did the Storage team agree?"} {
		t.Run(q, func(t *testing.T) {
			res := mustSearch(t, h, storageReq(q))
			if m := res.Meta; m.SearchMode != ModeTwoPass {
				t.Fatalf("search mode %s (%s), want two_pass", m.SearchMode, m.HierarchyReason)
			}
			ranked := distinctDocs(append(slices.Clone(res.Primary), res.RunnerUp...))
			worstMeeting, bestRunbook := 0, len(ranked)+1
			for _, m := range []string{"mtg-storage-sync", "mtg-backup-review"} {
				r := slices.Index(ranked, m) + 1
				if r == 0 {
					t.Fatalf("team meeting %s not ranked: %v", m, ranked)
				}
				worstMeeting = max(worstMeeting, r)
			}
			for _, rb := range []string{"rb-disk-full", "rb-restore", "rb-node-replace"} {
				if r := slices.Index(ranked, rb) + 1; r > 0 {
					bestRunbook = min(bestRunbook, r)
				}
			}
			if worstMeeting > bestRunbook {
				t.Errorf("a runbook (rank %d) outranks a team meeting (rank %d): %v", bestRunbook, worstMeeting, ranked)
			}
			top := res.Primary[0]
			if !hasSignal(top, "intent", 1) {
				t.Errorf("top hit %s: no intent contribution of 1 in %v", top.DocID, contributions(top))
			}
			if top.LinkingEntity != "storage-team" {
				t.Errorf("top hit %s was linked by %q, want storage-team", top.DocID, top.LinkingEntity)
			}
		})
	}
}

// TestIntentIsOffWhenNoDocumentFits: the storage handbook has no decisions, so
// "decide" adds no intent signal (and no explanation line); "how" finds its
// runbooks.
func TestIntentIsOffWhenNoDocumentFits(t *testing.T) {
	t.Parallel()
	h := storageSearcher(t)
	res := mustSearch(t, h, storageReq("What did Ana decide about backups?"))
	if res.Meta.SearchMode != ModeTwoPass {
		t.Fatalf("search mode %s, want two_pass", res.Meta.SearchMode)
	}
	for _, hit := range res.Primary {
		if hasSignal(hit, "intent", -1) {
			t.Errorf("%s has an intent contribution, but no document is a decision", hit.DocID)
		}
	}
	res = mustSearch(t, h, storageReq("How does Ana restore a volume?"))
	if top := res.Primary[0]; top.DocID != "rb-restore" || !hasSignal(top, "intent", 1) {
		t.Errorf("top hit %s, contributions %v: want rb-restore with intent 1", top.DocID, contributions(top))
	}
}

// contributions lists a hit's explanation, none when it has no explanation.
func contributions(h *domain.Hit) []domain.Contribution {
	if h.Explain == nil {
		return nil
	}
	return h.Explain.Contributions
}

// hasSignal reports whether the hit's explanation has the signal with that value
// (any value when value < 0).
func hasSignal(h *domain.Hit, signal string, value float64) bool {
	return slices.ContainsFunc(contributions(h), func(c domain.Contribution) bool {
		return c.Signal == signal && (value < 0 || c.Value == value)
	})
}
