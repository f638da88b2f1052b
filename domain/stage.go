package domain

import (
	"context"
	"time"
)

// Stage names a step of a search or a chat turn whose latency is reported.
type Stage string

// The stages a search and a chat turn report (metric label values).
const (
	StageEmbed     Stage = "embed"
	StageRanking   Stage = "ranking_statement"
	StageGraph     Stage = "graph_step"
	StagePass1     Stage = "pass1"
	StageLLMFirst  Stage = "llm_first_token"
	StageLLMTotal  Stage = "llm_total"
	StageRetrieval Stage = "retrieval"
)

// StageObserver receives the duration of one stage; nil observes nothing.
type StageObserver func(ctx context.Context, stage Stage, elapsed time.Duration)

// Observe reports a stage that started at start, if o is set.
func (o StageObserver) Observe(ctx context.Context, stage Stage, start time.Time) {
	if o != nil {
		o(ctx, stage, time.Since(start))
	}
}
