package auth

import (
	"strings"
	"testing"
)

func TestNewKey(t *testing.T) {
	t.Parallel()
	key, prefix, hash, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	if !WellFormed(key) || !strings.HasPrefix(key, prefix) || len(prefix) != visiblePrefixLen || len(hash) != 32 {
		t.Fatalf("key %q prefix %q hash %d bytes", key, prefix, len(hash))
	}
	other, _, _, _ := NewKey()
	if other == key {
		t.Fatal("two keys are equal")
	}
}

func TestParseBearer(t *testing.T) {
	t.Parallel()
	key, _, _, _ := NewKey()
	tests := []struct {
		name, header, want string
		wantErr            bool
	}{
		{"none", "", "", false},
		{"bearer", "Bearer " + key, key, false},
		{"lower-case scheme", "bearer " + key, key, false},
		{"basic", "Basic dXNlcjpwYXNz", "", true},
		{"no token", "Bearer", "", true},
		{"short", "Bearer canon_abc", "", true},
		{"other prefix", "Bearer xxxxx_" + key[6:], "", true},
		{"padding", "Bearer " + key[:len(key)-1] + "=", "", true},
		{"nul", "Bearer " + key[:len(key)-1] + "\x00", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseBearer(tt.header)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("ParseBearer(%q) = %q, %v", tt.header, got, err)
			}
		})
	}
}

func FuzzParseBearer(f *testing.F) {
	key, _, _, _ := NewKey()
	for _, s := range []string{"", "Bearer " + key, "Bearer", "bearer  " + key, "Basic x", "Bearer canon_\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		got, err := ParseBearer(header)
		if err == nil && got != "" && (!WellFormed(got) || !strings.Contains(header, got)) {
			t.Fatalf("ParseBearer(%q) accepted %q", header, got)
		}
	})
}
