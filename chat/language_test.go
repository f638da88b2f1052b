package chat_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/canonkb/canon/chat"
	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/embed"
	"github.com/canonkb/canon/hierarchy"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/internal/testdocs"
	"github.com/canonkb/canon/llm"
	"github.com/canonkb/canon/markdown"
	"github.com/canonkb/canon/search"
)

// TestLanguagesThroughChat answers from the German, French and mixed handbooks
// of testdocs as `canon serve` does (two-pass retrieval, the extractive
// provider, the calibrated gate): a question is answered from the page in its
// language, in that page's sentences; a question the handbooks cannot answer is
// refused in the question's language, with the same refusal_reason.
func TestLanguagesThroughChat(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := dbtest.FreshPool(t)
	in := ingest.New(p, embed.NewHash(384), markdown.Options{ChunkTokens: 512, OverlapTokens: 64})
	pages := testdocs.Handbooks()
	byProject := map[string][]ingest.File{}
	for _, path := range slices.Sorted(maps.Keys(pages)) {
		f := ingest.File{Path: path, Content: []byte(pages[path])}
		lang, _, _ := strings.Cut(path, "/")
		byProject[lang] = append(byProject[lang], f)
		byProject["mixed"] = append(byProject["mixed"], f)
	}
	for _, project := range slices.Sorted(maps.Keys(byProject)) {
		if res, err := in.Ingest(ctx, byProject[project], ingest.Options{Project: project}); err != nil || len(res.Errors) > 0 {
			t.Fatalf("ingest %s: %v %v", project, err, res.Errors)
		}
	}
	flat := search.New(p, embed.NewHash(384), search.Config{Ranking: domain.DefaultRanking(domain.ProfileHashKeywordLed),
		Profile: domain.ProfileHashKeywordLed, Graph: search.DefaultGraphConfig()})
	prompt, err := domain.ParsePrompt(domain.DefaultPromptTemplate())
	if err != nil {
		t.Fatal(err)
	}
	svc := chat.New(hierarchy.New(p, flat, hierarchy.DefaultConfig()), llm.NewExtractive(), prompt, nil,
		chat.Config{Gate: defaultGate, SupportThreshold: 0.5})

	for _, tc := range []struct {
		name, project, question string
		cites                   string // "" for a refusal
		says                    string // in the answer (a refusal: its catalogue language)
	}{
		{"german", "de", "Wie erneuere ich ein Zertifikat?", "de/zertifikate", "Wir erneuern sie zwei Wochen vorher"},
		{"german in mixed", "mixed", "Wie erneuere ich ein Zertifikat?", "de/zertifikate", "Wir erneuern sie zwei Wochen vorher"},
		{"french", "fr", "Comment renouveler un certificat ?", "fr/certificats", "Les certificats de la passerelle expirent après un an [1]."},
		{"french in mixed", "mixed", "Comment renouveler un certificat ?", "fr/certificats", "Les certificats de la passerelle expirent après un an [1]."},
		{"english in mixed", "mixed", "How do I renew a certificate?", "en/certificates", "renews them two weeks ahead"},
		{"german refusal", "de", "Wie backe ich einen Apfelkuchen mit Zimt?", "", "de"},
		{"french refusal", "fr", "Comment préparer une tarte aux pommes avec de la cannelle ?", "", "fr"},
		{"german refusal in mixed", "mixed", "Wie backe ich einen Apfelkuchen mit Zimt?", "", "de"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := svc.Answer(ctx, &domain.ChatRequest{Question: tc.question,
				Filters: domain.RawFilters{ProjectKeys: []string{tc.project}}}, "", chat.Events{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.cites == "" {
				want := domain.RefusalMessage(domain.RefusalNoRelevantContext, tc.says, []string{tc.project})
				if res.RefusalReason != domain.RefusalNoRelevantContext || res.Answer != want || res.Meta.Language != tc.says {
					t.Errorf("want the %s refusal %q; got %q (%q, language %q, best similarity %.2f, coverage %.2f)",
						tc.says, want, res.Answer, res.RefusalReason, res.Meta.Language,
						res.Meta.BestVectorSimilarity, res.Meta.BestKeywordCoverage)
				}
				return
			}
			if res.RefusalReason != "" || len(res.Citations) == 0 || res.Citations[0].DocID != tc.cites ||
				!strings.Contains(res.Answer, tc.says) {
				var cited []string
				for _, c := range res.Citations {
					cited = append(cited, c.DocID)
				}
				t.Errorf("want an answer from %s saying %q; got %q (refusal %q, cites %v)", tc.cites, tc.says,
					res.Answer, res.RefusalReason, cited)
			}
		})
	}
}
