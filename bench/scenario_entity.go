package bench

// Flat against two-pass on entity questions (a file with compare_hierarchy: true):
// each scenario runs two-pass (the scenario's own expectations are checked on
// that run) and flat, and the report compares P@5 and nDCG@10 of the two and how
// often the two-pass search decided as it should (entity questions two-pass,
// controls flat).

import (
	"context"
	"fmt"
	"slices"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/hierarchy"
)

// What a compare_hierarchy scenario is about; aboutNone marks a control.
const aboutNone = "none"

var aboutKinds = []string{"person", "team", "project", aboutNone}

// compareDepth is the page a compared scenario asks for when it sets no limit:
// nDCG@10 needs ten documents.
const compareDepth = 10

// EntityGate holds the thresholds of a compare_hierarchy file.
type EntityGate struct {
	// NDCG10Gain: two-pass minus flat nDCG@10 over the entity questions.
	NDCG10Gain *float64 `yaml:"entity_ndcg10_gain" json:"entity_ndcg10_gain,omitempty"`
	// ControlsFlat: share of the controls the two-pass search left flat.
	ControlsFlat *float64 `yaml:"controls_flat" json:"controls_flat,omitempty"`
	// DecisionAccuracy: share of all questions decided as they should be.
	DecisionAccuracy *float64 `yaml:"decision_accuracy" json:"decision_accuracy,omitempty"`
}

// CompareOutcome is one scenario's flat and two-pass runs.
type CompareOutcome struct {
	About         string   `json:"about"`
	Flat          []string `json:"flat"`
	FlatP5        float64  `json:"flat_p_at_5"`
	FlatNDCG10    float64  `json:"flat_ndcg_at_10"`
	TwoPassP5     float64  `json:"two_pass_p_at_5"`
	TwoPassNDCG10 float64  `json:"two_pass_ndcg_at_10"`
	// DecidedRight: two-pass for an entity question, flat for a control.
	DecidedRight bool `json:"decided_right"`
}

// CompareScores are the means of a group of compared scenarios.
type CompareScores struct {
	N             int     `json:"n"`
	FlatP5        float64 `json:"flat_p_at_5"`
	FlatNDCG10    float64 `json:"flat_ndcg_at_10"`
	TwoPassP5     float64 `json:"two_pass_p_at_5"`
	TwoPassNDCG10 float64 `json:"two_pass_ndcg_at_10"`
	// Decided: the share decided right (entity questions two-pass, controls flat).
	Decided float64 `json:"decided_right"`
}

// EntityMetrics compare flat and two-pass; nil without a compare_hierarchy file.
type EntityMetrics struct {
	// ByAbout: person, team, project, entity (the three together), none (controls), all.
	ByAbout          map[string]*CompareScores `json:"compare,omitempty"`
	NDCG10Gain       *float64                  `json:"entity_ndcg10_gain,omitempty"`
	ControlsFlat     *float64                  `json:"controls_flat,omitempty"`
	DecisionAccuracy *float64                  `json:"decision_accuracy,omitempty"`
}

// compareRequest asks for the two-pass search and a page deep enough for nDCG@10.
func compareRequest(req *domain.SearchRequest) {
	on := true
	req.Options.Hierarchy = &on
	if req.Options.Limit == 0 {
		req.Options.Limit = compareDepth
	}
}

// compare runs the flat search of req and scores both rankings.
func compare(ctx context.Context, searcher Searcher, req *domain.SearchRequest, s Scenario, mode string, twoPass []string) (*CompareOutcome, error) {
	flatReq := *req // a copy of the options; the filters' slices are shared, read only
	off := false
	flatReq.Options.Hierarchy = &off
	res, err := searcher.Search(ctx, &flatReq)
	if err != nil {
		return nil, fmt.Errorf("flat run: %w", err)
	}
	flat := docsOf(append(slices.Clone(res.Primary), res.RunnerUp...))
	want := hierarchy.ModeTwoPass
	if s.About == aboutNone {
		want = hierarchy.ModeFlat
	}
	return &CompareOutcome{
		About: s.About, Flat: flat,
		FlatP5: Precision(flat, s.Relevant, 5), FlatNDCG10: NDCG(flat, s.Relevant, 10),
		TwoPassP5: Precision(twoPass, s.Relevant, 5), TwoPassNDCG10: NDCG(twoPass, s.Relevant, 10),
		DecidedRight: mode == want,
	}, nil
}

// scoreEntities averages the compared scenarios that are not pending.
func scoreEntities(outcomes []ScenarioOutcome) EntityMetrics {
	var m EntityMetrics
	sums := map[string]*CompareScores{}
	add := func(group string, c *CompareOutcome) {
		g := sums[group]
		if g == nil {
			g = &CompareScores{}
			sums[group] = g
		}
		g.N++
		g.FlatP5 += c.FlatP5
		g.FlatNDCG10 += c.FlatNDCG10
		g.TwoPassP5 += c.TwoPassP5
		g.TwoPassNDCG10 += c.TwoPassNDCG10
		if c.DecidedRight {
			g.Decided++
		}
	}
	for _, o := range outcomes {
		c := o.Compare
		if o.Pending != "" || c == nil {
			continue
		}
		add(c.About, c)
		add("all", c)
		if c.About != aboutNone {
			add("entity", c)
		}
	}
	if len(sums) == 0 {
		return m
	}
	for _, g := range sums {
		n := float64(g.N)
		g.FlatP5 /= n
		g.FlatNDCG10 /= n
		g.TwoPassP5 /= n
		g.TwoPassNDCG10 /= n
		g.Decided /= n
	}
	m.ByAbout = sums
	if e := sums["entity"]; e != nil {
		gain := e.TwoPassNDCG10 - e.FlatNDCG10
		m.NDCG10Gain = &gain
	}
	if c := sums[aboutNone]; c != nil {
		m.ControlsFlat = &c.Decided
	}
	if a := sums["all"]; a != nil {
		m.DecisionAccuracy = &a.Decided
	}
	return m
}

func (r *ScenarioReport) entityGateRows() []gateRow {
	m, g := r.Metrics.EntityMetrics, r.Gate.EntityGate
	if m.ByAbout == nil && g == (EntityGate{}) {
		return nil
	}
	n := func(group string) int {
		if s := m.ByAbout[group]; s != nil {
			return s.N
		}
		return 0
	}
	return []gateRow{
		{name: "entity_ndcg10_gain", value: m.NDCG10Gain, min: g.NDCG10Gain,
			detail: fmt.Sprintf("two-pass minus flat nDCG@10, %d entity questions", n("entity"))},
		{name: "controls_flat", value: m.ControlsFlat, min: g.ControlsFlat, detail: fmt.Sprintf("%d controls", n(aboutNone))},
		{name: "decision_accuracy", value: m.DecisionAccuracy, min: g.DecisionAccuracy, detail: fmt.Sprintf("%d questions", n("all"))},
	}
}

// compareGroups is the order the comparison table lists its groups in.
var compareGroups = []string{"person", "team", "project", "entity", aboutNone, "all"}
