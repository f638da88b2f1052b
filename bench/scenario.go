package bench

// Scenario files: questions against a Markdown corpus with expectations about
// what canon's retrieval and refusal gate do with them (`canon bench scenarios`).
// This file holds the format, its validation and the loading of the corpus.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/hierarchy"
	"github.com/canonkb/canon/ingest"
)

// ScenarioFile is one YAML file of scenarios.
type ScenarioFile struct {
	// Name of the suite (default: the file's base name without extension).
	Name string `yaml:"name" json:"name"`
	// Corpus is the directory of Markdown files the scenarios run against,
	// relative to the YAML file's directory or to any directory above it (so
	// "examples/handbook" works from bench/scenarios/).
	Corpus string `yaml:"corpus" json:"corpus"`
	// Project is the default project of the corpus's files and of the scenarios.
	Project string `yaml:"project" json:"project"`
	// ProjectPrefix is prepended to every project key when the corpus is stored,
	// including keys named by a file's `project:` frontmatter, so the suite lives
	// beside any other data in the same database without touching it
	// (platform -> scenarios-handbook-platform). Scenarios name projects without it.
	ProjectPrefix string `yaml:"project_prefix" json:"project_prefix"`
	// Today pins the date the recency signal counts from (YYYY-MM-DD), so results
	// do not drift as the calendar moves. Empty: the real date.
	Today string `yaml:"today" json:"today,omitempty"`
	// CompareHierarchy runs every scenario twice, flat (options.hierarchy false)
	// and two-pass (true), and reports P@5, nDCG@10 and the two-pass/flat
	// decision of each run by the scenarios' `about` (scenario_entity.go).
	CompareHierarchy bool `yaml:"compare_hierarchy" json:"compare_hierarchy,omitempty"`
	// Gate holds the thresholds `--gate` enforces.
	Gate ScenarioGate `yaml:"gate" json:"gate"`
	// Scenarios, run in order.
	Scenarios []Scenario `yaml:"scenarios" json:"-"`

	dir string // the YAML file's directory
}

// ScenarioGate holds the minimum of each suite metric; a nil threshold is not
// checked. Pending scenarios count toward none of them.
type ScenarioGate struct {
	NDCG5           *float64 `yaml:"ndcg_at_5" json:"ndcg_at_5,omitempty"`
	MRR             *float64 `yaml:"mrr" json:"mrr,omitempty"`
	RefusalAccuracy *float64 `yaml:"refusal_accuracy" json:"refusal_accuracy,omitempty"`
	GraphRecall     *float64 `yaml:"graph_recall" json:"graph_recall,omitempty"`
	RejectedRecall  *float64 `yaml:"rejected_recall" json:"rejected_recall,omitempty"`
	PassRate        *float64 `yaml:"pass_rate" json:"pass_rate,omitempty"`
	AnswerGate      `yaml:",inline"`
	EntityGate      `yaml:",inline"`
}

// Scenario is one question and what should happen to it.
type Scenario struct {
	ID       string `yaml:"id" json:"id"`
	Question string `yaml:"question" json:"question"`
	// Feature names what the scenario covers (free text, grouped in the report).
	Feature string `yaml:"feature" json:"feature,omitempty"`
	// Projects searched (default: the file's project).
	Projects []string `yaml:"projects" json:"projects,omitempty"`
	// Fusion: weighted, rrf, semantic_only or keyword_only (default: the server's).
	Fusion string `yaml:"fusion" json:"fusion,omitempty"`
	// Limit is the number of primary hits (default: the server's).
	Limit   int             `yaml:"limit" json:"limit,omitempty"`
	Filters ScenarioFilters `yaml:"filters" json:"filters,omitzero"`
	Options ScenarioOptions `yaml:"options" json:"options,omitzero"`
	// Relevant holds graded judgments (document id -> gain, e.g. 3 highly relevant,
	// 1 partly) for nDCG@5 and MRR; scenarios without them count toward neither.
	Relevant map[string]int `yaml:"relevant" json:"relevant,omitempty"`
	Expect   Expectations   `yaml:"expect" json:"expect"`
	// About is what the question is about in a compare_hierarchy file: person,
	// team or project (an entity question, which should run two-pass) or none (a
	// control, which should stay flat).
	About string `yaml:"about" json:"about,omitempty"`
	// Pending names a reason the scenario is known to fail today (a feature not
	// built yet). It still runs and is reported, but counts toward no gated
	// metric; the report says when a pending scenario starts passing.
	Pending string `yaml:"pending" json:"pending,omitempty"`
}

// ScenarioFilters are the request filters (canon.v1.Filters without projects).
type ScenarioFilters struct {
	Tags           []string `yaml:"tags" json:"tags,omitempty"`
	SourceTypes    []string `yaml:"source_types" json:"source_types,omitempty"`
	CanonicalTypes []string `yaml:"canonical_types" json:"canonical_types,omitempty"`
	Statuses       []string `yaml:"statuses" json:"statuses,omitempty"`
	EvidenceTiers  []string `yaml:"evidence_tiers" json:"evidence_tiers,omitempty"`
	DateFrom       string   `yaml:"date_from" json:"date_from,omitempty"`
	DateTo         string   `yaml:"date_to" json:"date_to,omitempty"`
	DocIDs         []string `yaml:"doc_ids" json:"doc_ids,omitempty"`
	DocIDsMode     string   `yaml:"doc_ids_mode" json:"doc_ids_mode,omitempty"`
	// IncludeSuperseded false hides superseded documents (default: penalised only).
	IncludeSuperseded *bool `yaml:"include_superseded" json:"include_superseded,omitempty"`
}

// ScenarioOptions switch request features (unset: the server's default).
type ScenarioOptions struct {
	GraphExpansion    *bool `yaml:"graph_expansion" json:"graph_expansion,omitempty"`
	RejectedInjection *bool `yaml:"rejected_injection" json:"rejected_injection,omitempty"`
	// Hierarchy asks for the entity two-pass search.
	Hierarchy *bool `yaml:"hierarchy" json:"hierarchy,omitempty"`
}

// Expectations of one scenario; every one set must hold for the scenario to pass.
// "Document" means a document id (slug); a document's rank is the position of its
// first hit among distinct documents, counting from 1.
type Expectations struct {
	// Top: document -> k; the document is among the first k primary documents.
	Top map[string]int `yaml:"top" json:"top,omitempty"`
	// Above: pairs [a, b]; a is ranked (primary or runner-up) and above b, or b is
	// not ranked at all.
	Above [][2]string `yaml:"above" json:"above,omitempty"`
	// Absent: documents not among the primary hits.
	Absent []string `yaml:"absent" json:"absent,omitempty"`
	// Expanded / NotExpanded: documents in / not in the graph-expansion section.
	Expanded    []string `yaml:"expanded" json:"expanded,omitempty"`
	NotExpanded []string `yaml:"not_expanded" json:"not_expanded,omitempty"`
	// Rejected / NotRejected: documents in / not in the rejected-approach section.
	Rejected    []string `yaml:"rejected" json:"rejected,omitempty"`
	NotRejected []string `yaml:"not_rejected" json:"not_rejected,omitempty"`
	// MaxExpanded / MaxRejected: at most this many documents in the expanded /
	// rejected section (0: the section is empty).
	MaxExpanded *int `yaml:"max_expanded" json:"max_expanded,omitempty"`
	MaxRejected *int `yaml:"max_rejected" json:"max_rejected,omitempty"`
	// Refused: whether the chat turn (extractive provider, configured gate) refuses.
	Refused *bool `yaml:"refused" json:"refused,omitempty"`
	// SearchMode: two_pass or flat (meta.search_mode; "" counts as flat).
	SearchMode string `yaml:"search_mode" json:"search_mode,omitempty"`
	// HierarchyReason: why the search ran as it did (meta.hierarchy_reason:
	// confident_entities, no_entity_named, no_confident_entity,
	// entities_too_similar, disabled, keyword_only).
	HierarchyReason string `yaml:"hierarchy_reason" json:"hierarchy_reason,omitempty"`
	// Projects: every primary hit comes from one of these projects.
	Projects []string `yaml:"projects" json:"projects,omitempty"`
	// Hits constrains every primary hit's fields.
	Hits *HitConstraint `yaml:"hits" json:"hits,omitempty"`
	// MinPrimary is the least number of primary hits (e.g. 1: "something found").
	MinPrimary int `yaml:"min_primary" json:"min_primary,omitempty"`
	// Answer: what the chat turn's answer (extractive provider) must say and cite.
	Answer *AnswerExpectation `yaml:"answer" json:"answer,omitempty"`
}

// HitConstraint requires every primary hit to have one of the listed values of each field
// set ("" stands for none: a raw document has no canonical type or status).
type HitConstraint struct {
	Statuses       []string `yaml:"statuses" json:"statuses,omitempty"`
	CanonicalTypes []string `yaml:"canonical_types" json:"canonical_types,omitempty"`
	// TagsAny: every hit carries at least one of these tags.
	TagsAny []string `yaml:"tags_any" json:"tags_any,omitempty"`
	// Docs: every hit is one of these documents.
	Docs []string `yaml:"docs" json:"docs,omitempty"`
	// LinkingEntities: every hit was brought by one of these entities in a two-pass
	// search (hit.linking_entity), i.e. the page answers from their documents.
	LinkingEntities []string `yaml:"linking_entities" json:"linking_entities,omitempty"`
}

var scenarioIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)

// LoadScenarios reads and validates a scenario file.
func LoadScenarios(path string) (*ScenarioFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := ParseScenarios(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if f.Name == "" {
		f.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	f.dir = filepath.Dir(abs)
	return f, nil
}

// ParseScenarios decodes and validates a scenario file's bytes; unknown keys are
// errors, so a misspelt expectation never passes silently.
func ParseScenarios(b []byte) (*ScenarioFile, error) {
	var f ScenarioFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, err
	}
	if err := f.validate(); err != nil {
		return nil, err
	}
	return &f, nil
}

func (f *ScenarioFile) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if f.Corpus == "" {
		bad("corpus: required (a directory of Markdown files)")
	}
	if !ingest.ValidProjectKey(f.Project) {
		bad("project: %q is not a valid project key", f.Project)
	}
	if f.ProjectPrefix != "" && !ingest.ValidProjectKey(f.ProjectPrefix+"x") {
		bad("project_prefix: %q cannot start a project key", f.ProjectPrefix)
	}
	if f.Today != "" {
		if _, err := time.Parse(time.DateOnly, f.Today); err != nil {
			bad("today: %q is not YYYY-MM-DD", f.Today)
		}
	}
	if len(f.Scenarios) == 0 {
		bad("scenarios: none")
	}
	seen := map[string]bool{}
	for i, s := range f.Scenarios {
		where := fmt.Sprintf("scenarios[%d] (%s)", i, s.ID)
		switch {
		case !scenarioIDPattern.MatchString(s.ID):
			bad("%s: id must be lowercase letters, digits, '-', '_' or '.'", where)
		case seen[s.ID]:
			bad("%s: duplicate id", where)
		}
		seen[s.ID] = true
		if err := domain.ValidateQuery(s.Question); err != nil {
			bad("%s: question: %v", where, err)
		}
		for _, p := range s.Projects {
			if !ingest.ValidProjectKey(p) {
				bad("%s: projects: %q is not a valid project key", where, p)
			}
		}
		if s.Fusion != "" && !slices.Contains(domain.Fusions(), s.Fusion) {
			bad("%s: fusion %q: use one of %s", where, s.Fusion, strings.Join(domain.Fusions(), ", "))
		}
		if s.Limit < 0 || s.Limit > 100 {
			bad("%s: limit %d: use 1..100", where, s.Limit)
		}
		for doc, gain := range s.Relevant {
			if gain <= 0 {
				bad("%s: relevant[%s]: gain must be positive", where, doc)
			}
		}
		e := s.Expect
		for doc, k := range e.Top {
			if k < 1 {
				bad("%s: expect.top[%s]: k must be at least 1", where, doc)
			}
		}
		for _, pair := range e.Above {
			if pair[0] == "" || pair[1] == "" || pair[0] == pair[1] {
				bad("%s: expect.above: %v must name two different documents", where, pair)
			}
		}
		if e.MaxExpanded != nil && *e.MaxExpanded < 0 {
			bad("%s: expect.max_expanded: must not be negative", where)
		}
		if e.MaxRejected != nil && *e.MaxRejected < 0 {
			bad("%s: expect.max_rejected: must not be negative", where)
		}
		if e.SearchMode != "" && e.SearchMode != hierarchy.ModeTwoPass && e.SearchMode != hierarchy.ModeFlat {
			bad("%s: expect.search_mode %q: use two_pass or flat", where, e.SearchMode)
		}
		if e.HierarchyReason != "" && !slices.Contains(hierarchyReasons, e.HierarchyReason) {
			bad("%s: expect.hierarchy_reason %q: use one of %s", where, e.HierarchyReason, strings.Join(hierarchyReasons, ", "))
		}
		if e.Answer != nil {
			e.Answer.validate(where, bad)
		}
		if f.CompareHierarchy {
			switch {
			case !slices.Contains(aboutKinds, s.About):
				bad("%s: about %q: use one of %s", where, s.About, strings.Join(aboutKinds, ", "))
			case len(s.Relevant) == 0:
				bad("%s: relevant: required in a compare_hierarchy file", where)
			case s.Options.Hierarchy != nil:
				bad("%s: options.hierarchy: a compare_hierarchy file runs both", where)
			}
		} else if s.About != "" {
			bad("%s: about: only in a compare_hierarchy file", where)
		}
		if e.empty() && !f.CompareHierarchy {
			bad("%s: expect: no expectation set", where)
		}
	}
	return errors.Join(errs...)
}

func (e Expectations) empty() bool {
	return len(e.Top) == 0 && len(e.Above) == 0 && len(e.Absent) == 0 && len(e.Expanded) == 0 &&
		len(e.NotExpanded) == 0 && len(e.Rejected) == 0 && len(e.NotRejected) == 0 && e.MaxExpanded == nil &&
		e.MaxRejected == nil && e.Refused == nil &&
		e.SearchMode == "" && e.HierarchyReason == "" && len(e.Projects) == 0 && e.Hits == nil && e.MinPrimary == 0 &&
		e.Answer == nil
}

var hierarchyReasons = []string{hierarchy.ReasonConfident, hierarchy.ReasonNoEntityNamed, hierarchy.ReasonNoConfidentEntity, hierarchy.ReasonTooSimilar,
	hierarchy.ReasonDisabled, hierarchy.ReasonKeywordOnly}

// StoredProject is the key a project of the file is stored under.
func (f *ScenarioFile) StoredProject(key string) string { return f.ProjectPrefix + key }

// CorpusDir resolves the corpus directory: absolute as is, else relative to the
// YAML file's directory or the nearest directory above it that has it.
func (f *ScenarioFile) CorpusDir() (string, error) {
	if filepath.IsAbs(f.Corpus) {
		return f.Corpus, nil
	}
	base := f.dir
	if base == "" {
		base, _ = os.Getwd()
	}
	for dir := base; ; dir = filepath.Dir(dir) {
		cand := filepath.Join(dir, f.Corpus)
		if info, err := os.Stat(cand); err == nil && info.IsDir() {
			return cand, nil
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	return "", fmt.Errorf("corpus %q: no such directory in %s or above it", f.Corpus, base)
}

// frontmatterProject matches a top-level `project:` key in YAML frontmatter.
var (
	frontmatterProject = regexp.MustCompile(`(?m)^project:[ \t]*(?:"([^"\n]*)"|'([^'\n]*)'|([^#\n]*?))[ \t]*(#.*)?$`)
	frontmatterEnd     = regexp.MustCompile(`(?m)^(---|\.\.\.)[ \t]*\r?$`)
)

// splitFrontmatter returns the frontmatter block of a Markdown file (without its
// delimiters) and its byte offsets; ok is false when the file has none.
func splitFrontmatter(s string) (fm string, start, end int, ok bool) {
	rest, found := strings.CutPrefix(s, "---\n")
	if !found {
		if rest, found = strings.CutPrefix(s, "---\r\n"); !found {
			return "", 0, 0, false
		}
	}
	start = len(s) - len(rest)
	loc := frontmatterEnd.FindStringIndex(rest)
	if loc == nil {
		return "", 0, 0, false
	}
	return rest[:loc[0]], start, start + loc[0], true
}

// frontmatterProjectOf is the value of a file's frontmatter `project:` key, or "".
func frontmatterProjectOf(content []byte) string {
	fm, _, _, ok := splitFrontmatter(string(content))
	if !ok {
		return ""
	}
	m := frontmatterProject.FindStringSubmatch(fm)
	if m == nil {
		return ""
	}
	return strings.TrimSpace(m[1] + m[2] + m[3])
}

// PrefixProject rewrites a Markdown file's frontmatter `project:` value to
// prefix+value (files without one go to the ingest's default project, which the
// runner prefixes too). Only the frontmatter block is touched; the rewrite is
// deterministic, so re-ingesting the same corpus stores nothing new.
func PrefixProject(content []byte, prefix string) []byte {
	if prefix == "" {
		return content
	}
	s := string(content)
	fm, start, end, ok := splitFrontmatter(s)
	if !ok {
		return content
	}
	fm = frontmatterProject.ReplaceAllStringFunc(fm, func(line string) string {
		m := frontmatterProject.FindStringSubmatch(line)
		value := strings.TrimSpace(m[1] + m[2] + m[3])
		if value == "" {
			return line
		}
		return "project: " + prefix + value
	})
	return []byte(s[:start] + fm + s[end:])
}

// IngestScenarioCorpus loads the file's corpus into its prefixed projects through
// the normal ingest path, pruning documents whose files are gone. A second run
// with the same files writes nothing.
func IngestScenarioCorpus(ctx context.Context, in *ingest.Ingester, f *ScenarioFile) (ingest.Result, error) {
	dir, err := f.CorpusDir()
	if err != nil {
		return ingest.Result{}, err
	}
	files, err := ingest.ReadDirs([]string{dir})
	if err != nil {
		return ingest.Result{}, err
	}
	if len(files) == 0 {
		return ingest.Result{}, fmt.Errorf("corpus %s has no Markdown files", dir)
	}
	// Every project the scenarios search takes part, with or without files, so a
	// project whose last file is gone is emptied rather than left stale.
	byProject := map[string][]ingest.File{f.StoredProject(f.Project): nil}
	for _, s := range f.Scenarios {
		for _, p := range s.Projects {
			byProject[f.StoredProject(p)] = nil
		}
	}
	for _, file := range files {
		file.Content = PrefixProject(file.Content, f.ProjectPrefix)
		owner := frontmatterProjectOf(file.Content)
		if owner == "" {
			owner = f.StoredProject(f.Project)
		}
		byProject[owner] = append(byProject[owner], file)
	}
	var total ingest.Result
	// One run per stored project, each with prune (which acts on the run's
	// default project), so every project mirrors its files exactly.
	for _, p := range slices.Sorted(maps.Keys(byProject)) {
		res, err := in.Ingest(ctx, byProject[p], ingest.Options{Project: p, Prune: true, PruneEmpty: true})
		total.Files += res.Files
		total.Created += res.Created
		total.Updated += res.Updated
		total.Unchanged += res.Unchanged
		total.Pruned += res.Pruned
		total.Chunks += res.Chunks
		total.Errors = append(total.Errors, res.Errors...)
		total.Notices = append(total.Notices, res.Notices...)
		total.Elapsed += res.Elapsed
		if err != nil {
			return total, fmt.Errorf("ingest %s: %w", p, err)
		}
	}
	if len(total.Errors) > 0 {
		return total, fmt.Errorf("corpus %s: %d files rejected, first: %s", dir, len(total.Errors), total.Errors[0].Error())
	}
	return total, nil
}
