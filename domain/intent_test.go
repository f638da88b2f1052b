package domain

import (
	"slices"
	"strings"
	"testing"
)

func TestQuestionIntents(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		question string
		want     []string
	}{
		{"What did the platform team discuss?", []string{"meeting"}},
		{"What was agreed at the kickoff meeting?", []string{"meeting"}},
		{"Why did we choose Kafka?", []string{"decision"}},
		{"How do I roll back a deploy?", []string{"runbook"}},
		{"How did the team decide, and what was said?", []string{"meeting", "decision", "runbook"}},
		{"What cache layer did we standardise on?", nil},
		{"Discussion of showing", []string{"meeting"}}, // "showing" is not "how"
		{"What happened in the ledger lag incident?", []string{"incident"}},
		{"Which outages did Priya handle?", []string{"incident"}},
		// "how" followed by these asks for a description or an amount.
		{"How is money represented in payments?", nil},
		{"How many people attended the kickoff?", []string{"meeting"}},
		{"How long does a canary step last?", []string{"runbook"}}, // "step"
		{"How come we dropped Memcached?", nil},
		{"How are refunds retried, and what are the steps?", []string{"runbook"}},
		{"how", []string{"runbook"}},
		{"What should I do when DSP-4410 fires?", []string{"runbook"}},
		{"So what do we do if the replica lags?", []string{"runbook"}},
		{"What do I need to know about Kafka?", nil},
	} {
		if got := IntentNames(QuestionIntents(tc.question)); !slices.Equal(got, tc.want) && len(got)+len(tc.want) > 0 {
			t.Errorf("QuestionIntents(%q) = %v, want %v", tc.question, got, tc.want)
		}
	}
}

func TestIntentFits(t *testing.T) {
	t.Parallel()
	byName := map[string]Intent{}
	for _, in := range Intents() {
		byName[in.Name] = in
	}
	for _, tc := range []struct {
		intent string
		kind   DocumentKind
		want   bool
	}{
		{"meeting", DocumentKind{SourceType: "meeting-notes"}, true},
		{"meeting", DocumentKind{SourceType: "wiki", Attended: true}, true},
		{"meeting", DocumentKind{CanonicalType: "decision"}, false},
		{"decision", DocumentKind{CanonicalType: "decision"}, true},
		{"runbook", DocumentKind{CanonicalType: "runbook"}, true},
		{"runbook", DocumentKind{SourceType: "runbook"}, false},
		{"incident", DocumentKind{CanonicalType: "incident"}, true},
		{"incident", DocumentKind{SourceType: "postmortem"}, true},
		{"incident", DocumentKind{CanonicalType: "runbook"}, false},
	} {
		if got := byName[tc.intent].Fits(tc.kind); got != tc.want {
			t.Errorf("%s fits %+v = %v, want %v", tc.intent, tc.kind, got, tc.want)
		}
	}
}

func TestWithoutActivityWords(t *testing.T) {
	t.Parallel()
	for q, want := range map[string]string{
		"What has been working on?":     "What",
		"what is responsible for?":      "what is for?",
		"What is 's favourite pizza?":   "What is 's favourite pizza?",
		"Which runbooks does Dana own?": "Which runbooks Dana",
	} {
		if got := WithoutActivityWords(q); got != want {
			t.Errorf("WithoutActivityWords(%q) = %q, want %q", q, got, want)
		}
	}
}

func TestQuestionFrame(t *testing.T) {
	t.Parallel()
	decision := DocumentKind{CanonicalType: "decision"}
	meeting := DocumentKind{SourceType: "meeting-notes"}
	runbook := DocumentKind{CanonicalType: "runbook"}
	tests := []struct {
		question string
		verbs    string
		fits     []DocumentKind
	}{
		{"What did we decide about secrets?", "decide", []DocumentKind{decision}},
		{"what did we discuss and decide at the kickoff?", "discuss decide", []DocumentKind{meeting, decision}},
		{"what did we decide?", "", nil},                        // nothing else is asked
		{"is active-active writing agreed?", "", nil},           // the yes/no question asks the verb
		{"what was the decision on secrets?", "", nil},          // a noun names the kind, or the subject
		{"how do I rotate the keys?", "", nil},                  // the runbook intent has no verbs
		{"what happened in the DNS incident?", "happened", nil}, // incidents
	}
	for _, tc := range tests {
		f := QuestionFrame(tc.question)
		if got := strings.Join(f.Verbs, " "); got != tc.verbs {
			t.Errorf("QuestionFrame(%q).Verbs = %q, want %q", tc.question, got, tc.verbs)
		}
		for _, k := range tc.fits {
			if !f.Fits(k) {
				t.Errorf("QuestionFrame(%q) does not fit %+v", tc.question, k)
			}
		}
		if f.Fits(runbook) {
			t.Errorf("QuestionFrame(%q) fits a runbook", tc.question)
		}
	}
}
