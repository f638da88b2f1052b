package domain_test

import (
	"slices"
	"testing"

	"github.com/canonkb/canon/domain"
)

func TestRenumbering(t *testing.T) {
	t.Parallel()
	valid := func(n int) bool { return n >= 1 && n <= 9 }
	for _, tt := range []struct {
		name, in, want string
		prompt         []int
	}{
		{"first use is [1]", "Redis [5]. Kafka [3]. Redis again [5].", "Redis [1]. Kafka [2]. Redis again [1].", []int{5, 3}},
		{"already in order", "A [1]. B [2].", "A [1]. B [2].", []int{1, 2}},
		{"lists and repeats", "A [4, 2]. B [2][4]. C [2, 2].", "A [1, 2]. B [2][1]. C [2].", []int{4, 2}},
		{"unknown numbers dropped", "A [12]. B [7, 99].", "A . B [1].", []int{7}},
		{"no markers", "Nothing cited.", "Nothing cited.", nil},
		{"brackets that are not markers", "Use a[i] and [x] or [ 3 ] [2].", "Use a[i] and [x] or [ 3 ] [1].", []int{2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := domain.NewRenumbering(valid)
			if got := r.Rewrite(tt.in); got != tt.want || !slices.Equal(r.Prompt, tt.prompt) {
				t.Errorf("Rewrite(%q) = %q, prompt %v; want %q, %v", tt.in, got, r.Prompt, tt.want, tt.prompt)
			}
		})
	}
}

// However the stream splits the text, what it shows adds up to the whole text
// rewritten, with the same numbers.
func TestRenumberingStreamSplitsAnywhere(t *testing.T) {
	t.Parallel()
	valid := func(n int) bool { return n >= 1 && n <= 20 }
	in := "We cache in Redis [12]; see [3, 12] and [7][3]. Not [99] or [ab]. Trailing [4"
	whole := domain.NewRenumbering(valid)
	want := whole.Rewrite(in)
	for size := 1; size <= len(in); size++ {
		r := domain.NewRenumbering(valid)
		var got string
		for i := 0; i < len(in); i += size {
			got += r.Stream(in[i:min(i+size, len(in))])
		}
		got += r.Flush()
		if got != want || !slices.Equal(r.Prompt, whole.Prompt) {
			t.Fatalf("pieces of %d: %q, prompt %v; want %q, %v", size, got, r.Prompt, want, whole.Prompt)
		}
	}
}
