package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	canonv1 "github.com/canonkb/canon/gen/canon/v1"
	"github.com/canonkb/canon/server"
)

// searchFlags are the request flags `search` (and later `ask`) share.
type searchFlags struct {
	projects, tags, sourceTypes, canonicalTypes, statuses, evidenceTiers, docIDs []string
	dateFrom, dateTo, docIDsMode, fusion                                         string
	excludeSuperseded                                                            bool
	limit                                                                        int
}

func (f *searchFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringSliceVarP(&f.projects, "project", "p", nil, "project key to search (repeatable; required)")
	cobra.CheckErr(cmd.MarkFlagRequired("project"))
	fl.StringSliceVar(&f.tags, "tag", nil, "only documents with any of these tags (repeatable)")
	fl.StringSliceVar(&f.sourceTypes, "source-type", nil, "only these source types, e.g. adr, runbook (repeatable)")
	fl.StringSliceVar(&f.canonicalTypes, "canonical-type", nil, "only these canonical types, e.g. decision (repeatable)")
	fl.StringSliceVar(&f.statuses, "status", nil, "only these statuses, e.g. accepted (repeatable)")
	fl.StringSliceVar(&f.evidenceTiers, "evidence-tier", nil, "only these evidence tiers (repeatable)")
	fl.StringSliceVar(&f.docIDs, "doc-id", nil, "boost these documents (or restrict to them with --doc-ids-mode filter)")
	fl.StringVar(&f.docIDsMode, "doc-ids-mode", "boost", "boost or filter")
	fl.StringVar(&f.dateFrom, "date-from", "", "only documents effective on or after YYYY-MM-DD")
	fl.StringVar(&f.dateTo, "date-to", "", "only documents effective on or before YYYY-MM-DD")
	fl.BoolVar(&f.excludeSuperseded, "exclude-superseded", false, "hide superseded documents (default: penalise them)")
	fl.StringVar(&f.fusion, "fusion", "", "weighted (default), rrf, semantic_only or keyword_only")
	fl.IntVarP(&f.limit, "limit", "n", 0, "number of primary hits, 1..100 (default $KB_SEARCH_LIMIT or 8)")
}

func (f *searchFlags) filters() *canonv1.Filters {
	flt := &canonv1.Filters{
		ProjectKeys: f.projects, Tags: f.tags, SourceTypes: f.sourceTypes, CanonicalTypes: f.canonicalTypes,
		Statuses: f.statuses, EvidenceTiers: f.evidenceTiers, DocIds: f.docIDs, DocIdsMode: f.docIDsMode,
		DateFrom: f.dateFrom, DateTo: f.dateTo,
	}
	if f.excludeSuperseded {
		flt.IncludeSuperseded = proto.Bool(false)
	}
	return flt
}

func newSearchCmd() *cobra.Command {
	var (
		databaseURL           string
		flags                 searchFlags
		hflags                hierarchyFlags
		explain, asJSON, sqlF bool
	)
	cmd := &cobra.Command{
		Use:   `search "question" --project KEY`,
		Short: "Rank a project's chunks for a question (hybrid retrieval, in SQL)",
		Long: `Runs the hybrid retrieval pipeline: vector and BM25 keyword legs, fusion, trust
gradient, per-document cap. A question about a person, team or project that
names it confidently runs in two passes: its entities first, then their documents
(--no-hierarchy ranks flat). --explain shows every signal and its contribution
and the entities; --sql prints the exact (flat) statements with their parameters
bound, ready for psql: the ranking, then the graph step seeded by its page.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(databaseURL)
			if err != nil {
				return err
			}
			a, err := openApp(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer a.Close()
			req := &canonv1.SearchRequest{
				Query:   args[0],
				Filters: flags.filters(),
				Options: &canonv1.SearchOptions{Fusion: flags.fusion, Limit: int32(flags.limit), Explain: explain},
			}
			hflags.apply(cmd, req.Options)
			out := cmd.OutOrStdout()
			if sqlF {
				stmt, err := a.searcher.Statement(cmd.Context(), server.SearchRequest(req))
				if err != nil {
					return err
				}
				_, err = io.WriteString(out, stmt)
				return err
			}
			found, err := a.hierarchy.Search(cmd.Context(), server.SearchRequest(req))
			if err != nil {
				return err
			}
			res := server.SearchResultProto(found)
			if asJSON {
				return printJSON(out, res)
			}
			printSearch(out, res, explain)
			return nil
		},
	}
	cmd.Flags().StringVar(&databaseURL, "database-url", "", "PostgreSQL URL (default $DATABASE_URL)")
	flags.register(cmd)
	hflags.register(cmd)
	cmd.Flags().BoolVar(&explain, "explain", false, "show every signal and its contribution to the score")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as protobuf JSON (snake_case field names)")
	cmd.Flags().BoolVar(&sqlF, "sql", false, "print the exact SQL (ranking, then graph step) with parameters bound instead of the result")
	return cmd
}

func printJSON(w io.Writer, m proto.Message) error {
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  ", UseProtoNames: true}.Marshal(m)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

func printSearch(w io.Writer, res *canonv1.SearchResult, explain bool) {
	m := res.GetMeta()
	fmt.Fprintf(w, "%d primary, %d runner-up · fusion %s · profile %s · %.1f ms · terms %s (%s)\n\n",
		m.GetPrimaryCount(), m.GetRunnerUpCount(), m.GetSearchStrategy().GetFusionMethod(),
		m.GetSearchStrategy().GetProfile(), m.GetRetrievalMs(), strings.Join(m.GetQueryTerms(), " "),
		strings.Join(m.GetQueryConfigs(), ", "))
	if explain {
		printHierarchy(w, m)
	}
	if len(res.GetPrimary()) == 0 {
		fmt.Fprintln(w, "no results")
		return
	}
	section := func(title string, hits []*canonv1.Hit) {
		if len(hits) == 0 {
			return
		}
		fmt.Fprintln(w, title)
		for i, h := range hits {
			kind := h.GetStatus()
			if h.GetCanonicalType() != "" {
				kind = h.GetCanonicalType() + "/" + kind
			}
			extra := ""
			if e := h.GetEdge(); e.GetEdgeType() != "" {
				extra = fmt.Sprintf("  (%s %s, %s %.2f)", e.GetDirection(), e.GetFromDocId(), e.GetEdgeType(), e.GetWeight())
			}
			if h.GetOrigin() == "rejected_approach" {
				extra = fmt.Sprintf("  (cosine %.3f)", h.GetSimilarity())
			}
			if explain {
				extra += hitEntity(h)
			}
			fmt.Fprintf(w, "%3d  %.4f  %s  %s%s\n", i+1, h.GetScore(), h.GetDocId(), kind, extra)
			fmt.Fprintf(w, "             %s\n", strings.Join(h.GetHeadingPath(), " › "))
			fmt.Fprintf(w, "             %s\n", h.GetSnippet())
			if explain && h.GetExplain() != nil {
				for _, c := range h.GetExplain().GetContributions() {
					if c.GetContribution() != 0 {
						fmt.Fprintf(w, "               %-20s %+.4f = %.4g × %.4g\n", c.GetSignal(), c.GetContribution(), c.GetWeight(), c.GetValue())
					}
				}
				var terms []string
				for _, t := range h.GetExplain().GetTerms() {
					terms = append(terms, fmt.Sprintf("%s %.2f", t.GetTerm(), t.GetScore()))
				}
				if len(terms) > 0 {
					fmt.Fprintf(w, "               bm25 terms: %s\n", strings.Join(terms, ", "))
				}
			}
		}
		fmt.Fprintln(w)
	}
	section("PRIMARY", res.GetPrimary())
	section("RELATED (graph)", res.GetExpanded())
	section("REJECTED APPROACHES", res.GetRejected())
	section("RUNNERS-UP", res.GetRunnerUp())
}
