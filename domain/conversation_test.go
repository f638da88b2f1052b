package domain_test

import (
	"strings"
	"testing"

	"github.com/canonkb/canon/domain"
)

func TestFollowUpQuery(t *testing.T) {
	user := func(s string) domain.Turn { return domain.Turn{Role: "user", Content: s} }
	assistant := func(s string) domain.Turn { return domain.Turn{Role: "assistant", Content: s} }
	long := strings.Repeat("c", domain.MaxQueryLength-2)
	tests := []struct {
		name     string
		question string
		history  []domain.Turn
		want     string
		ok       bool
	}{
		{"the conversation starts here", "why?", nil, "", false},
		{"only the assistant spoke", "why?", []domain.Turn{assistant("Hello.")}, "", false},
		{"the last question the user asked", "why?",
			[]domain.Turn{user("what broker do we use?"), assistant("Kafka [1]."), user(" what cache layer did we standardise on? "),
				assistant("Redis Cluster [1].")},
			"what cache layer did we standardise on? why?", true},
		{"an empty user turn is skipped", "and in staging?",
			[]domain.Turn{user("how do rollbacks work?"), user("  ")}, "how do rollbacks work? and in staging?", true},
		{"too long together", "why?", []domain.Turn{user(long)}, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := domain.FollowUpQuery(tc.question, tc.history)
			if got != tc.want || ok != tc.ok {
				t.Errorf("FollowUpQuery(%q) = %q, %v; want %q, %v", tc.question, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestFollowUpCovered(t *testing.T) {
	passages := []string{"We standardised on Redis Cluster for caching.", "Staging deploys roll back automatically."}
	tests := []struct {
		question string
		want     bool
	}{
		{"why?", true},
		{"and in staging?", true},
		{"what about the clusters?", true},
		{"and in production?", false},
		{"what is the best banana bread recipe?", false},
	}
	for _, tc := range tests {
		if got := domain.FollowUpCovered(tc.question, passages); got != tc.want {
			t.Errorf("FollowUpCovered(%q) = %v, want %v", tc.question, got, tc.want)
		}
	}
}

func TestRefersBack(t *testing.T) {
	tests := []struct {
		question string
		want     bool
	}{
		{"how long does it take?", true},
		{"why is that?", true},
		{"who approves it?", true},
		{"why?", false},
		{"and in staging?", false},
		{"how do we roll it back in the payments service?", false},
		{"what cache layer did we standardise on?", false},
	}
	for _, tc := range tests {
		if got := domain.RefersBack(tc.question); got != tc.want {
			t.Errorf("RefersBack(%q) = %v, want %v", tc.question, got, tc.want)
		}
	}
}
