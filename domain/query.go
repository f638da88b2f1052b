package domain

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxQueryLength bounds a question, in characters.
const MaxQueryLength = 4000

// MaxLimit bounds the number of primary hits a request may ask for.
const MaxLimit = 100

// InvalidError is a request a person must fix; its message says how.
type InvalidError struct{ Message string }

func (e *InvalidError) Error() string { return e.Message }

func invalid(format string, args ...any) error {
	return &InvalidError{Message: fmt.Sprintf(format, args...)}
}

// IsInvalid reports whether err is (or wraps) an InvalidError.
func IsInvalid(err error) bool {
	var ie *InvalidError
	return errors.As(err, &ie)
}

// NotFoundError names something a request referred to that does not exist.
type NotFoundError struct{ Message string }

func (e *NotFoundError) Error() string { return e.Message }

// Filters restrict retrieval; empty fields mean "any".
type Filters struct {
	ProjectKeys       []string
	Tags              []string
	SourceTypes       []string
	CanonicalTypes    []string
	Statuses          []string
	EvidenceTiers     []string
	DateFrom, DateTo  *time.Time
	DocIDs            []string
	DocIDsFilter      bool
	IncludeSuperseded bool
}

// RestrictsDocuments reports whether the filters exclude any document of the
// searched projects (project scoping aside): the ranking statement then checks
// each candidate's document inside its legs.
func (f Filters) RestrictsDocuments() bool {
	return len(f.Tags) > 0 || len(f.SourceTypes) > 0 || len(f.CanonicalTypes) > 0 || len(f.Statuses) > 0 ||
		len(f.EvidenceTiers) > 0 || f.DateFrom != nil || f.DateTo != nil || f.DocIDsFilter || !f.IncludeSuperseded
}

// MaxFilterValues bounds each filter list (project keys, tags, doc ids, …): a
// question names a handful, and each value costs the ranking statement.
const MaxFilterValues = 100

// MaxProjectKeys bounds the projects one search names: the ranking statement
// spells the project ids as that many slots (canon_project_slots, migration
// 00063), the form whose generic plan prunes other projects' partitions.
const MaxProjectKeys = 16

// RawFilters is Filters as a request spells them, before validation.
type RawFilters struct {
	ProjectKeys, Tags, SourceTypes, CanonicalTypes, Statuses, EvidenceTiers, DocIDs []string
	DateFrom, DateTo, DocIDsMode, ProjectKey                                        string
	IncludeSuperseded                                                               *bool
}

// ValidateQuery checks a question: present, not over-long, valid UTF-8.
func ValidateQuery(q string) error {
	switch {
	case TextProblem(q) != "":
		return invalid("query %s", TextProblem(q))
	case strings.TrimSpace(q) == "":
		return invalid("query is empty: ask a question or give search terms")
	case utf8.RuneCountInString(q) > MaxQueryLength:
		return invalid("query is %d characters long; the limit is %d", utf8.RuneCountInString(q), MaxQueryLength)
	}
	return nil
}

// ValidateLimit maps 0 to the default and rejects values outside 1..MaxLimit.
func ValidateLimit(limit, def int) (int, error) {
	if limit == 0 {
		return def, nil
	}
	if limit < 1 || limit > MaxLimit {
		return 0, invalid("limit must be between 1 and %d (got %d)", MaxLimit, limit)
	}
	return limit, nil
}

// ValidateFusion maps "" to the default and rejects unknown methods.
func ValidateFusion(fusion, def string) (string, error) {
	if fusion == "" {
		return def, nil
	}
	if fusion == "rerank_weighted_sum" {
		return FusionWeighted, nil
	}
	if !slices.Contains(fusions, fusion) {
		return "", invalid("unknown fusion %s: use one of %s", Quote(fusion), strings.Join(fusions, ", "))
	}
	return fusion, nil
}

// ParseFilters validates filters. The legacy single project_key joins project_keys.
func ParseFilters(r RawFilters) (Filters, error) {
	f := Filters{IncludeSuperseded: true}
	if r.IncludeSuperseded != nil {
		f.IncludeSuperseded = *r.IncludeSuperseded
	}
	keys := slices.Clone(r.ProjectKeys)
	if r.ProjectKey != "" && !slices.Contains(keys, r.ProjectKey) {
		keys = append(keys, r.ProjectKey)
	}
	if len(keys) > MaxProjectKeys {
		return f, invalid("a search names %d projects; the limit is %d", len(keys), MaxProjectKeys)
	}
	lists := []struct {
		field  string
		values []string
		limit  int
	}{{"project_keys", keys, MaxValueBytes}, {"tags", r.Tags, MaxValueBytes}, {"source_types", r.SourceTypes, MaxValueBytes},
		{"canonical_types", r.CanonicalTypes, MaxValueBytes}, {"statuses", r.Statuses, MaxValueBytes},
		{"evidence_tiers", r.EvidenceTiers, MaxValueBytes}, {"doc_ids", r.DocIDs, MaxSlugBytes}}
	for _, l := range lists {
		if len(l.values) > MaxFilterValues {
			return f, invalid("%s lists %d values; the limit is %d per filter", l.field, len(l.values), MaxFilterValues)
		}
		for _, v := range l.values {
			if err := ValidateName("a value of "+l.field, v, l.limit); err != nil {
				return f, err
			}
		}
	}
	f.ProjectKeys = keys
	f.Tags = lower(r.Tags)
	f.SourceTypes = r.SourceTypes
	f.DocIDs = lower(r.DocIDs)
	if err := oneOf("canonical_types", r.CanonicalTypes, nodeTypes); err != nil {
		return f, err
	}
	f.CanonicalTypes = r.CanonicalTypes
	if err := oneOf("statuses", r.Statuses, statuses); err != nil {
		return f, err
	}
	f.Statuses = r.Statuses
	if err := oneOf("evidence_tiers", r.EvidenceTiers, evidenceTiers); err != nil {
		return f, err
	}
	f.EvidenceTiers = r.EvidenceTiers
	var err error
	if f.DateFrom, err = parseDate("date_from", r.DateFrom); err != nil {
		return f, err
	}
	if f.DateTo, err = parseDate("date_to", r.DateTo); err != nil {
		return f, err
	}
	if f.DateFrom != nil && f.DateTo != nil && f.DateFrom.After(*f.DateTo) {
		return f, invalid("date_from (%s) is after date_to (%s)", r.DateFrom, r.DateTo)
	}
	switch r.DocIDsMode {
	case "", "boost":
	case "filter":
		f.DocIDsFilter = true
		if len(f.DocIDs) == 0 {
			return f, invalid("doc_ids_mode \"filter\" needs at least one doc_id")
		}
	default:
		return f, invalid("unknown doc_ids_mode %s: use boost or filter", Quote(r.DocIDsMode))
	}
	return f, nil
}

// maxListedSourceTypes bounds the declared source types a message lists.
const maxListedSourceTypes = 20

// ValidateSourceTypes checks a source_types filter, whose values are open: each
// must be a format canon reads or a source_type a document of the searched
// projects declares (declared; its reader needs it only when a value is not a
// format). A value neither would find nothing, which reads as an answer.
func ValidateSourceTypes(values, declared, projects []string) error {
	for _, v := range values {
		if IsSourceFormat(v) || slices.Contains(declared, v) {
			continue
		}
		others := slices.DeleteFunc(slices.Clone(declared), IsSourceFormat)
		msg := fmt.Sprintf("unknown value %s in source_types: use a format (%s)", Quote(v), strings.Join(sourceFormats, ", "))
		switch {
		case len(others) == 0:
			msg += fmt.Sprintf("; no document of %s declares another source_type", strings.Join(projects, ", "))
		case len(others) > maxListedSourceTypes:
			msg += fmt.Sprintf(" or a source_type the documents of %s declare (%s, and %d more)", strings.Join(projects, ", "),
				strings.Join(others[:maxListedSourceTypes], ", "), len(others)-maxListedSourceTypes)
		default:
			msg += fmt.Sprintf(" or a source_type the documents of %s declare (%s)", strings.Join(projects, ", "),
				strings.Join(others, ", "))
		}
		return &InvalidError{Message: msg}
	}
	return nil
}

func oneOf(field string, values, allowed []string) error {
	for _, v := range values {
		if !slices.Contains(allowed, v) {
			return invalid("unknown value %s in %s: use %s", Quote(v), field, strings.Join(allowed, ", "))
		}
	}
	return nil
}

func parseDate(field, s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return nil, invalid("%s must be a date as YYYY-MM-DD (got %s)", field, Quote(s))
	}
	return &t, nil
}

func lower(in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		out = append(out, strings.ToLower(strings.TrimSpace(s)))
	}
	return out
}

var mentionPattern = regexp.MustCompile(`(?:^|[\s(\[,;])@([A-Za-z0-9][A-Za-z0-9_./-]*[A-Za-z0-9])`)

// Mentions returns the document slugs a question names as @slug, lower-cased, in order.
func Mentions(question string) []string {
	var out []string
	for _, m := range mentionPattern.FindAllStringSubmatch(question, -1) {
		slug := strings.ToLower(m[1])
		if !slices.Contains(out, slug) {
			out = append(out, slug)
		}
	}
	return out
}

// DocIDsMode names how DocIDs apply, as requests spell it: "filter" or "boost".
func (f Filters) DocIDsMode() string {
	if f.DocIDsFilter {
		return "filter"
	}
	return "boost"
}
