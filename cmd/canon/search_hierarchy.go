package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/canonkb/canon/config"
	canonv1 "github.com/canonkb/canon/gen/canon/v1"
	"github.com/canonkb/canon/hierarchy"
)

// hierarchyConfig maps the KB_HIERARCHY_* variables onto the two-pass search.
func hierarchyConfig(cfg config.Config) hierarchy.Config {
	e := cfg.Hierarchy
	c := hierarchy.DefaultConfig()
	c.Enabled = e.Enabled
	c.NameGate = e.NameGate
	c.Pass1 = hierarchy.Pass1Params{
		MaxEntities: e.MaxEntities, Threshold: e.EntityThreshold, MinGap: e.MinGap, TeamDiscount: e.TeamDiscount,
		Weights: hierarchy.Weights{
			NameExact: e.NameExactWeight, NameFuzzy: e.NameFuzzyWeight, Role: e.RoleWeight,
			Facts: e.FactsWeight, Vector: e.VectorWeight,
		},
	}
	c.Alpha = e.Alpha
	c.LinkStrength = e.LinkStrength
	c.Links = hierarchy.LinkWeights{
		Page: e.LinkPage, Declared: e.LinkDeclared, Attendee: e.LinkAttendee, Tag: e.LinkTag,
		MemberMeeting: e.LinkMemberMeeting, Mention: e.LinkMention,
	}
	c.IntentWeight = e.IntentWeight
	c.StripNames = e.StripNames
	c.BatchSize, c.StableRounds, c.MaxBatches = e.BatchSize, e.StableRounds, e.MaxBatches
	c.CacheSize, c.CacheTTL = e.CacheSize, e.CacheTTL
	return c
}

// hierarchyFlags are the two-pass search's flags.
type hierarchyFlags struct {
	off   bool
	alpha float64
}

func (f *hierarchyFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&f.off, "no-hierarchy", false, "always rank flat: skip the two-pass entity-guided search")
	fl.Float64Var(&f.alpha, "hierarchy-alpha", 0, "two-pass mix: alpha·document score + (1−alpha)·entity score, 0..1 (default $KB_HIERARCHY_ALPHA or 0.5)")
}

// options are the request's hierarchy and hierarchy_alpha (nil: the server's default).
func (f *hierarchyFlags) options(cmd *cobra.Command) (hierarchy *bool, alpha *float64) {
	if f.off {
		off := false
		hierarchy = &off
	}
	if cmd.Flags().Changed("hierarchy-alpha") {
		a := f.alpha
		alpha = &a
	}
	return hierarchy, alpha
}

func (f *hierarchyFlags) apply(cmd *cobra.Command, o *canonv1.SearchOptions) {
	o.Hierarchy, o.HierarchyAlpha = f.options(cmd)
}

func (f *hierarchyFlags) applyChat(cmd *cobra.Command, o *canonv1.ChatOptions) {
	o.Hierarchy, o.HierarchyAlpha = f.options(cmd)
}

// printHierarchy shows how the search ran: the mode, why, pass 1's entities and
// pass 2's rounds.
func printHierarchy(w io.Writer, m *canonv1.SearchMeta) {
	if m.GetSearchMode() == "" {
		return
	}
	fmt.Fprintf(w, "search mode %s (%s)", m.GetSearchMode(), m.GetHierarchyReason())
	if m.GetSearchMode() == hierarchy.ModeTwoPass {
		fmt.Fprintf(w, " · %d candidate documents · %d pass-2 batches", m.GetPass2Candidates(), m.GetPass2Batches())
	}
	fmt.Fprintln(w)
	var ents []string
	for _, e := range m.GetPass1Entities() {
		s := fmt.Sprintf("%s %s %.3f", e.GetType(), e.GetEntityId(), e.GetScore())
		if e.GetVia() != "" {
			s += " via " + e.GetVia()
		}
		if e.GetChosen() {
			s += " *"
		}
		ents = append(ents, s)
	}
	if len(ents) > 0 {
		fmt.Fprintf(w, "pass-1 entities (* chosen): %s\n", strings.Join(ents, ", "))
	}
	fmt.Fprintln(w)
}

// hitEntity describes the entity that brought a hit in a two-pass search.
func hitEntity(h *canonv1.Hit) string {
	if h.GetLinkingEntity() == "" {
		return ""
	}
	return fmt.Sprintf("  (entity %s %.3f)", h.GetLinkingEntity(), h.GetParentEntityScore())
}
