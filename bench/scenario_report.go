package bench

import (
	"fmt"
	"io"
	"strings"
)

// WriteText prints the report: metrics against the gate, then one line per
// scenario with its failures; verbose adds each scenario's ranking.
func (r *ScenarioReport) WriteText(w io.Writer, verbose bool) {
	fmt.Fprintf(w, "scenarios %s: corpus %s, projects prefixed %q, embedder %s, profile %s\n",
		r.Name, r.Corpus, r.Prefix, r.Embedder, r.Profile)
	in := r.Ingest
	fmt.Fprintf(w, "ingest: %d files, %d created, %d updated, %d unchanged, %d pruned\n\n",
		in.Files, in.Created, in.Updated, in.Unchanged, in.Pruned)
	for _, o := range r.Outcomes {
		status := "PASS"
		switch {
		case o.Pending != "" && o.Passed:
			status = "PASS*"
		case o.Pending != "":
			status = "PEND"
		case !o.Passed:
			status = "FAIL"
		}
		fmt.Fprintf(w, "%-5s %-34s %-13s %s\n", status, o.ID, o.Fusion, o.Question)
		if o.Pending != "" {
			fmt.Fprintf(w, "      pending: %s\n", o.Pending)
		}
		for _, f := range o.Failures {
			fmt.Fprintf(w, "      - %s\n", f)
		}
		if verbose {
			if o.HierarchyReason != "" {
				fmt.Fprintf(w, "      search:   %s (%s)\n", o.SearchMode, o.HierarchyReason)
			}
			fmt.Fprintf(w, "      primary:  %s\n", list(o.Primary))
			if len(o.RunnerUp) > 0 {
				fmt.Fprintf(w, "      runners:  %s\n", list(o.RunnerUp))
			}
			if len(o.Expanded) > 0 {
				fmt.Fprintf(w, "      expanded: %s\n", list(o.Expanded))
			}
			if len(o.Rejected) > 0 {
				fmt.Fprintf(w, "      rejected: %s\n", list(o.Rejected))
			}
			if o.Answer != nil && o.Answer.Text != "" {
				fmt.Fprintf(w, "      answer:   %s\n", strings.ReplaceAll(o.Answer.Text, "\n", "\n                "))
			}
			if o.Refused != nil {
				fmt.Fprintf(w, "      chat: refused=%v (cosine %.3f, coverage %.2f)\n", *o.Refused, o.BestSimilarity, o.BestCoverage)
			}
			if c := o.Compare; c != nil {
				fmt.Fprintf(w, "      flat:     %s\n", list(c.Flat))
				fmt.Fprintf(w, "      about %s: P@5 %.2f flat, %.2f two-pass; nDCG@10 %.3f flat, %.3f two-pass\n",
					c.About, c.FlatP5, c.TwoPassP5, c.FlatNDCG10, c.TwoPassNDCG10)
			}
			if o.NDCG5 != nil {
				fmt.Fprintf(w, "      nDCG@5 %.3f, RR %.3f\n", *o.NDCG5, *o.MRR)
			}
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-18s %7s %9s  %s\n", "metric", "value", "threshold", "over")
	for _, g := range r.gateRows() {
		val, threshold := "-", "-"
		if g.value != nil {
			val = fmt.Sprintf("%.3f", *g.value)
		}
		if g.min != nil {
			threshold = fmt.Sprintf(">= %.2f", *g.min)
		}
		if g.max != nil {
			threshold = fmt.Sprintf("<= %.2f", *g.max)
		}
		fmt.Fprintf(w, "%-18s %7s %9s  %s\n", g.name, val, threshold, g.detail)
	}
	r.writeCompare(w)
	if len(r.NowPassing) > 0 {
		fmt.Fprintf(w, "\npending scenarios that pass now (drop their pending mark): %s\n", strings.Join(r.NowPassing, ", "))
	}
	if len(r.GateFail) > 0 {
		fmt.Fprintf(w, "\ngate: FAILED\n")
		for _, f := range r.GateFail {
			fmt.Fprintf(w, "  - %s\n", f)
		}
	} else {
		fmt.Fprintf(w, "\ngate: passed (%.1f s)\n", r.ElapsedMs/1000)
	}
}

// writeCompare prints the flat against two-pass table of a compare_hierarchy file.
func (r *ScenarioReport) writeCompare(w io.Writer) {
	by := r.Metrics.ByAbout
	if by == nil {
		return
	}
	fmt.Fprintf(w, "\n%-8s %4s  %8s %8s  %10s %10s  %s\n", "about", "n", "flat P@5", "2p P@5", "flat nDCG10", "2p nDCG10", "decided right")
	for _, g := range compareGroups {
		s := by[g]
		if s == nil {
			continue
		}
		fmt.Fprintf(w, "%-8s %4d  %8.3f %8.3f  %10.3f %10.3f  %.3f\n", g, s.N, s.FlatP5, s.TwoPassP5, s.FlatNDCG10, s.TwoPassNDCG10, s.Decided)
	}
}
