package ingest

import "testing"

func TestBulkPolicyApplies(t *testing.T) {
	t.Parallel()
	policy := BulkPolicy{MinChunks: 10000, Ratio: 1}
	for _, tc := range []struct {
		name   string
		policy BulkPolicy
		chunks int
		stored int64
		want   bool
	}{
		{"first load", policy, 100000, 0, true},
		{"at the minimum", policy, 10000, 0, true},
		{"below the minimum", policy, 9999, 0, false},
		{"as large as what is stored", policy, 50000, 50000, true},
		{"smaller than what is stored", policy, 50000, 50001, false},
		{"a 1% change", policy, 1000, 100000, false},
		{"off", BulkPolicy{MinChunks: 0, Ratio: 1}, 100000, 0, false},
		{"ratio 0: any load over the minimum", BulkPolicy{MinChunks: 1, Ratio: 0}, 1, 1000000, true},
		{"ratio 2", BulkPolicy{MinChunks: 1, Ratio: 2}, 150, 100, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.policy.applies(tc.chunks, tc.stored); got != tc.want {
				t.Errorf("applies(%d, %d) = %v, want %v", tc.chunks, tc.stored, got, tc.want)
			}
		})
	}
}

func TestBatchChunksFor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		chunks, workers int
		want            int
	}{
		{"a handbook", 300, 2, 256},
		{"a batch per worker", 1320, 4, 330},
		{"a large load", 100000, 2, 1024},
		{"one worker", 800, 1, 800},
		{"no workers given", 5000, 0, 1024},
		{"nothing", 0, 2, 256},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := batchChunksFor(tc.chunks, tc.workers); got != tc.want {
				t.Errorf("batchChunksFor(%d, %d) = %d, want %d", tc.chunks, tc.workers, got, tc.want)
			}
		})
	}
}
