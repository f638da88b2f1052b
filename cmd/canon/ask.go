package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/canonkb/canon/chat"
	"github.com/canonkb/canon/chatlog"
	"github.com/canonkb/canon/domain"
	canonv1 "github.com/canonkb/canon/gen/canon/v1"
	"github.com/canonkb/canon/hierarchy"
	"github.com/canonkb/canon/server"
)

func newAskCmd() *cobra.Command {
	var (
		databaseURL, lang string
		flags             searchFlags
		hflags            hierarchyFlags
		asJSON            bool
	)
	cmd := &cobra.Command{
		Use:   `ask "question" --project KEY`,
		Short: "Answer a question from a project's documents, with checked citations",
		Long: `Retrieves context (primary, related and rejected approaches), refuses without
calling the model when nothing relevant was found, otherwise asks the configured
language model (KB_LLM_PROVIDER; default extractive, offline) and prints the answer
with its citations. On a terminal the answer streams as it is generated. Retrieval
is canon search's: a question that confidently names a person, team or project
runs in two passes, its entities' documents first (--no-hierarchy: flat).`,
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
			req := &canonv1.ChatRequest{
				Question: args[0],
				Filters:  flags.filters(),
				Options:  &canonv1.ChatOptions{Fusion: flags.fusion, Limit: int32(flags.limit), Language: lang},
			}
			hflags.applyChat(cmd, req.Options)
			out := cmd.OutOrStdout()
			streaming := !asJSON && isTerminal(out)
			var ev chat.Events
			if streaming {
				ev.Delta = func(d string) error { _, err := io.WriteString(out, d); return err }
			}
			answer, err := a.chat.Answer(cmd.Context(), server.ChatRequest(req), localeLanguage(os.Getenv), ev)
			if err != nil {
				return err
			}
			res := server.ChatResponseProto(answer)
			if asJSON {
				return printJSON(out, res)
			}
			printAnswer(out, res, streaming)
			return nil
		},
	}
	cmd.Flags().StringVar(&databaseURL, "database-url", "", "PostgreSQL URL (default $DATABASE_URL)")
	flags.register(cmd)
	hflags.register(cmd)
	cmd.Flags().StringVar(&lang, "lang", "", "language of refusal messages: "+strings.Join(domain.RefusalLanguages(), ", ")+
		" (default: the locale's, else the question's)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the response as protobuf JSON (snake_case field names)")
	return cmd
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func printAnswer(w io.Writer, res *canonv1.ChatResponse, streamed bool) {
	m := res.GetMeta()
	if res.GetRefusalReason() != "" {
		fmt.Fprintf(w, "REFUSED (%s): %s\n", res.GetRefusalReason(), res.GetAnswer())
		fmt.Fprintf(w, "  evidence: best cosine %.3f, best keyword coverage %.2f · %s · %s · %.1f ms\n",
			m.GetBestVectorSimilarity(), m.GetBestKeywordCoverage(), searchMode(m), m.GetProvider(), m.GetTotalMs())
		return
	}
	if !streamed {
		fmt.Fprintln(w, res.GetAnswer())
	} else {
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	if len(res.GetCitations()) > 0 {
		fmt.Fprintln(w, "Citations:")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, c := range res.GetCitations() {
			fmt.Fprintf(tw, "  [%d]\t%s\t%s\n", c.GetN(), c.GetDocId(), strings.Join(append([]string{c.GetTitle()}, tail(c.GetHeadingPath())...), " › "))
		}
		tw.Flush()
	}
	unsupported := 0
	for _, s := range m.GetSentences() {
		if !s.GetSupported() {
			unsupported++
		}
	}
	fmt.Fprintf(w, "\n%s/%s · %s · retrieval %.1f ms · generation %.1f ms · support %.0f%% of cited sentences",
		m.GetProvider(), m.GetModel(), searchMode(m), m.GetRetrievalMs(), m.GetGenerationMs(), 100*m.GetCitationSupport())
	if unsupported > 0 {
		fmt.Fprintf(w, " (%d unsupported)", unsupported)
	}
	fmt.Fprintln(w)
	if len(m.GetFollowUps()) > 0 {
		fmt.Fprintln(w, "Follow-ups:")
		for _, f := range m.GetFollowUps() {
			fmt.Fprintln(w, "  -", f)
		}
	}
}

// searchMode says how retrieval ran: "two_pass (dana)" names the chosen
// entities, "flat (no_confident_entity)" the reason.
func searchMode(m *canonv1.ChatMeta) string {
	if m.GetSearchMode() != hierarchy.ModeTwoPass {
		return fmt.Sprintf("%s (%s)", m.GetSearchMode(), m.GetHierarchyReason())
	}
	var chosen []string
	for _, e := range m.GetPass1Entities() {
		if e.GetChosen() {
			chosen = append(chosen, e.GetEntityId())
		}
	}
	return fmt.Sprintf("%s (%s)", m.GetSearchMode(), strings.Join(chosen, ", "))
}

// tail drops a heading path's first element when it repeats the title.
func tail(path []string) []string {
	if len(path) > 1 {
		return path[1:]
	}
	return nil
}

func newGapsCmd() *cobra.Command {
	var (
		databaseURL, project string
		limit                int
		asJSON               bool
	)
	cmd := &cobra.Command{
		Use:   "gaps --project KEY",
		Short: "List the questions canon could not answer, most asked first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(databaseURL)
			if err != nil {
				return err
			}
			a, err := openApp(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer a.Close()
			gaps, err := chatlog.ContentGaps(cmd.Context(), a.pool, a.reads, project, limit)
			if err != nil {
				return err
			}
			res := server.ContentGapsProto(gaps)
			out := cmd.OutOrStdout()
			if asJSON {
				return printJSON(out, res)
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "COUNT\tLAST SEEN\tQUESTION")
			for _, g := range res.GetGaps() {
				// One line each, however long or ragged the question (--json has it whole).
				fmt.Fprintf(tw, "%d\t%s\t%s\n", g.GetCount(), g.GetLastSeen(), domain.Snippet(g.GetQuestion(), nil))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&databaseURL, "database-url", "", "PostgreSQL URL (default $DATABASE_URL)")
	cmd.Flags().StringVarP(&project, "project", "p", "", "project key (required)")
	cobra.CheckErr(cmd.MarkFlagRequired("project"))
	cmd.Flags().IntVarP(&limit, "limit", "n", 50, "number of questions, 1..1000")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as protobuf JSON")
	return cmd
}

// localeLanguage is the language of the POSIX locale (LC_ALL, LC_MESSAGES or
// LANG, the first set) as an Accept-Language value: "de_DE.UTF-8" is "de". The C
// and POSIX locales (Debian's default C.UTF-8) name no language, so the
// question's own decides.
func localeLanguage(getenv func(string) string) string {
	for _, name := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		if v := getenv(name); v != "" {
			lang, _, _ := strings.Cut(v, ".")
			lang, _, _ = strings.Cut(lang, "@")
			if lang == "C" || lang == "POSIX" {
				return ""
			}
			return strings.ReplaceAll(lang, "_", "-")
		}
	}
	return ""
}
