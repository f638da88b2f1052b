package markdown

import (
	"slices"
	"testing"
)

func TestFrontmatterAccess(t *testing.T) {
	tests := []struct {
		name, front string
		want        []string
		wantErr     bool
	}{
		{"absent", "title: A", nil, false},
		{"list", "access: [eng, ops, eng]", []string{"eng", "ops"}, false},
		{"single value", "access: finance", []string{"finance"}, false},
		{"null", "access:", nil, false},
		{"bad group", `access: ["a b"]`, nil, true},
		{"nested", "access: [[a]]", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := Parse("a.md", []byte("---\n"+tt.front+"\n---\n# A\n\nText.\n"), Options{})
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v", err)
			}
			if err == nil && !slices.Equal(doc.Access, tt.want) {
				t.Fatalf("access %q, want %q", doc.Access, tt.want)
			}
		})
	}
}
