package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/canonkb/canon/domain"
)

// offTopicQuestions are questions no engineering handbook or scientific corpus
// answers: the negatives of the refusal calibration.
var offTopicQuestions = []string{
	"what is the capital of France?", "best banana bread recipe", "who won the football world cup in 2018?",
	"do I need a visa to travel to Japan?", "how tall is mount everest?", "what is the meaning of life",
	"recommend a good pizza place", "how do I knit a scarf?", "what's the weather tomorrow in Paris?",
	"translate hello into Spanish", "how many calories in an apple", "who painted the mona lisa",
	"write me a poem about the sea", "how do I change a car tire?", "what time does the supermarket close?",
	"which films won an oscar last year?", "how do I make a paper airplane?", "what is the plot of hamlet?",
	"how much does a flight to Lisbon cost?", "who is the lead singer of the rolling stones?",
	"what is a good name for a golden retriever puppy?", "how do I get red wine out of a carpet?",
	"what are the rules of cricket?", "when is the next full moon?", "how do I tie a bow tie?",
	"what should I cook for dinner tonight?", "where can I buy cheap concert tickets?",
	"what is the tallest building in Dubai?", "how many players are on a basketball team?",
	"recommend a fantasy novel for a long train ride",
}

// OffTopicQuestions returns the refusal calibration's negatives (a copy).
func OffTopicQuestions() []string { return slices.Clone(offTopicQuestions) }

// RefusalPoint is the evidence the refusal gate sees for one question.
type RefusalPoint struct {
	Question   string  `json:"question"`
	Answerable bool    `json:"answerable"`
	Similarity float64 `json:"best_cosine"`
	Coverage   float64 `json:"best_keyword_coverage"`
}

// RefusalEvidence searches each question and records the best raw cosine and keyword
// coverage among its primary hits, the absolute evidence the chat gate uses.
func RefusalEvidence(ctx context.Context, s Searcher, project string, questions []string, answerable bool) ([]RefusalPoint, error) {
	var out []RefusalPoint
	for _, q := range questions {
		text, _ := QueryText(q)
		res, err := s.Search(ctx, &domain.SearchRequest{
			Query: text, Filters: domain.RawFilters{ProjectKeys: []string{project}},
		})
		if err != nil {
			return nil, fmt.Errorf("%q: %w", q, err)
		}
		p := RefusalPoint{Question: q, Answerable: answerable}
		for _, h := range res.Primary {
			p.Similarity = max(p.Similarity, h.VectorSimilarity)
			p.Coverage = max(p.Coverage, h.KeywordCoverage)
		}
		out = append(out, p)
	}
	return out, nil
}

// RefusalScore is the gate's accuracy at one pair of thresholds.
type RefusalScore struct {
	MinSimilarity      float64 `json:"min_similarity"`
	MinKeywordCoverage float64 `json:"min_keyword_coverage"`
	Accuracy           float64 `json:"accuracy"`
	FalseRefusals      int     `json:"false_refusals"`
	FalseAnswers       int     `json:"false_answers"`
	Answerable         int     `json:"answerable"`
	OffTopic           int     `json:"off_topic"`
}

// ScoreGate applies a gate to the points.
func ScoreGate(points []RefusalPoint, g domain.Gate) RefusalScore {
	s := RefusalScore{MinSimilarity: g.MinSimilarity, MinKeywordCoverage: g.MinKeywordCoverage}
	right := 0
	for _, p := range points {
		admitted, _, _ := g.Admit([]domain.Evidence{{VectorSimilarity: p.Similarity, KeywordCoverage: p.Coverage}})
		if p.Answerable {
			s.Answerable++
			if admitted {
				right++
			} else {
				s.FalseRefusals++
			}
		} else {
			s.OffTopic++
			if !admitted {
				right++
			} else {
				s.FalseAnswers++
			}
		}
	}
	if len(points) > 0 {
		s.Accuracy = float64(right) / float64(len(points))
	}
	return s
}

// SweepGate scores a grid of thresholds, best accuracy first (ties: fewer false
// answers, then the stricter gate).
func SweepGate(points []RefusalPoint, sims, covs []float64) []RefusalScore {
	var out []RefusalScore
	for _, s := range sims {
		for _, c := range covs {
			out = append(out, ScoreGate(points, domain.Gate{MinSimilarity: s, MinKeywordCoverage: c}))
		}
	}
	slices.SortStableFunc(out, func(a, b RefusalScore) int {
		switch {
		case a.Accuracy != b.Accuracy:
			if a.Accuracy > b.Accuracy {
				return -1
			}
			return 1
		case a.FalseAnswers != b.FalseAnswers:
			return a.FalseAnswers - b.FalseAnswers
		}
		return 0
	})
	return out
}

// WriteRefusalText prints the configured gate's score and the best of the sweep.
func WriteRefusalText(w io.Writer, name string, configured RefusalScore, sweep []RefusalScore) {
	fmt.Fprintf(w, "refusal gate on %s: %d answerable questions, %d off-topic\n", name, configured.Answerable, configured.OffTopic)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "gate\tmin cosine\tmin coverage\taccuracy\tfalse refusals\tfalse answers")
	row := func(label string, s RefusalScore) {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.3f\t%d\t%d\n", label, s.MinSimilarity, s.MinKeywordCoverage, s.Accuracy, s.FalseRefusals, s.FalseAnswers)
	}
	row("configured", configured)
	for i, s := range sweep {
		if i == 5 {
			break
		}
		row(fmt.Sprintf("sweep #%d", i+1), s)
	}
	tw.Flush()
}
