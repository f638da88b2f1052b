// Package ingest loads documents into a project: convert and validate (Markdown,
// HTML, plain text, PDF, DOCX; see package convert), skip what has not changed,
// embed in batches, and store each changed document (chunks, graph links,
// entity pages, mentions) in one transaction. It also re-embeds a project with
// another embedder (Reembed) and keeps a project in step with folders (Watch).
package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgvector/pgvector-go"
	"golang.org/x/sync/errgroup"

	"github.com/canonkb/canon/convert"
	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/embed"
	db "github.com/canonkb/canon/gen/db"
	"github.com/canonkb/canon/language"
	"github.com/canonkb/canon/lifecycle"
	"github.com/canonkb/canon/markdown"
	"github.com/canonkb/canon/postgres"
)

// File is one file to ingest: its path relative to the knowledge root, and its
// bytes. A file named <path>.meta.yaml is the sidecar of <path> (its metadata),
// not a document.
type File struct {
	Path    string
	Content []byte
}

// FileError says why a file was skipped, as `path:line: reason`.
type FileError struct {
	Path   string
	Line   int
	Reason string
}

func (e FileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Reason)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Reason)
}

// Result summarises one run.
type Result struct {
	Files, Created, Updated, Unchanged, Pruned, Chunks int
	Errors                                             []FileError
	Notices                                            []string
	Elapsed                                            time.Duration
	Steps                                              Steps
}

// Steps splits a run's time. Embed and Store add up every worker's time (they
// overlap); the others are wall-clock.
type Steps struct {
	// Convert: files to documents (in parallel).
	Convert time.Duration
	// Embed: the embedder's calls.
	Embed time.Duration
	// Store: the batches' transactions (rows, triggers, indexes, commit).
	Store time.Duration
	// IndexBuild: building the indexes a bulk load deferred.
	IndexBuild time.Duration
	// Mentions: rebuilding the projects' body mentions of entities (and first
	// analysing the tables a load left with stale statistics).
	Mentions time.Duration
}

// Progress receives the number of files handled so far and the total.
type Progress func(done, total int)

// Ingester stores documents. It is safe for concurrent use; concurrent runs on the
// same project serialise on the documents they both touch.
type Ingester struct {
	pool     *pgxpool.Pool
	embedder embed.Embedder
	chunking markdown.Options
	// Converter turns files into documents (its limits, where poppler is).
	Converter convert.Converter
	// Workers is how many batches are stored at once, and files converted at
	// once (0: DefaultWorkers).
	Workers int
	// Bulk decides when a large load builds the vector index after its rows
	// (see BulkPolicy).
	Bulk BulkPolicy
	// AfterChange runs after a run that changed something (caches keyed on the
	// corpus drop their entries).
	AfterChange func(projectKeys []string)
}

// changed tells this process (AfterChange) and the others that listen
// (postgres.ChannelChanges) that the projects changed. The change is committed
// whatever happens here: a notification that could not be sent is a notice.
func (in *Ingester) changed(ctx context.Context, projectKeys []string, notices *[]string) {
	if len(projectKeys) == 0 {
		return
	}
	if in.AfterChange != nil {
		in.AfterChange(projectKeys)
	}
	err := db.New(in.pool).NotifyProjectsChanged(ctx, db.NotifyProjectsChangedParams{
		Channel: postgres.ChannelChanges, ProjectKeys: projectKeys})
	if err != nil {
		*notices = append(*notices, fmt.Sprintf("other canon processes were not told of this change (%v): "+
			"their cached entity links follow it within KB_HIERARCHY_CACHE_TTL", err))
	}
}

// New returns an Ingester.
func New(pool *pgxpool.Pool, embedder embed.Embedder, chunking markdown.Options) *Ingester {
	return &Ingester{pool: pool, embedder: embedder, chunking: chunking, Converter: convert.Converter{Chunking: chunking},
		Bulk: DefaultBulkPolicy()}
}

// EmbedderIdentity names what made a document's vectors (documents.embedder):
// the embedder and its dimension.
func EmbedderIdentity(e embed.Embedder) string { return fmt.Sprintf("%s/%d", e.Name(), e.Dim()) }

// Options of one run.
type Options struct {
	// Project receives files whose frontmatter names none.
	Project string
	// ProjectOnly refuses a file whose frontmatter names another project: the
	// Ingest RPC's caller was authorized, and is audited, for Project alone.
	ProjectOnly bool
	// Prune deletes the project's documents whose files are not in this run;
	// a run with no documents is refused (it would delete them all) unless
	// PruneEmpty is set.
	Prune bool
	// PruneEmpty lets a Prune run with no documents empty Project (creating it
	// if missing), for a caller that knows its empty file list is the project's
	// whole source (the scenario harness); no CLI flag or RPC field sets it.
	PruneEmpty bool
	// Language (ISO 639-1) is stored on Project: its documents without a
	// frontmatter `lang:` are in it, this run and later ones ("": keep the
	// project's, or detect each document's).
	Language string
	Progress Progress
}

var projectKeyPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)

// ValidProjectKey reports whether key can name a project.
func ValidProjectKey(key string) bool { return projectKeyPattern.MatchString(key) }

// projectRefusal says why a file may not go to project (its frontmatter's, or
// the run's), or "" when it may. The caller's own projects are checked here too,
// whatever the entry point: a key for one project never writes another's.
func projectRefusal(ctx context.Context, project string, opts Options) string {
	switch {
	case !ValidProjectKey(project):
		return fmt.Sprintf("invalid project %s: use lowercase letters, digits, '-', '_' or '.'", domain.Quote(project))
	case opts.ProjectOnly && project != opts.Project:
		return fmt.Sprintf("the frontmatter names project %s, but this request ingests into project %q: "+
			"send the file in a request for that project, or remove its `project:`", domain.Quote(project), opts.Project)
	case !domain.PrincipalFrom(ctx).MayUse(project):
		return fmt.Sprintf("the frontmatter names project %s, which this key may not use", domain.Quote(project))
	}
	return ""
}

// parsed is a file of the run: converted (doc), or known unchanged from its
// bytes alone (doc nil). language is the document's, decided when it is stored.
type parsed struct {
	file     File
	slug     string
	doc      *markdown.Document
	hash     string
	language string
}

// Ingest stores files. A file that fails validation is reported in Result.Errors and
// skipped; the run goes on and nothing stored for it is touched. The returned error
// is for failures of the run itself (database unreachable, embedder down).
func (in *Ingester) Ingest(ctx context.Context, files []File, opts Options) (Result, error) {
	start := time.Now()
	if !ValidProjectKey(opts.Project) {
		return Result{}, fmt.Errorf("invalid project key %s: use lowercase letters, digits, '-', '_' or '.'", domain.Quote(opts.Project))
	}
	files, err := cleanPaths(files)
	if err != nil {
		return Result{}, err
	}
	docs, sidecars, orphans := pairSidecars(files)
	res := Result{Files: len(docs)}
	if opts.Language != "" {
		code, err := language.Normalize(opts.Language)
		if err != nil {
			return res, err
		}
		opts.Language = code
	}
	if opts.Prune && !opts.PruneEmpty && len(docs) == 0 {
		// An empty upload or folder (a wrong path, a failed mount) is far more
		// often a mistake than a project to empty.
		return res, &domain.InvalidError{Message: fmt.Sprintf("prune with no files would delete every document of project %q: "+
			"refused; send the project's files with prune, or leave prune off", opts.Project)}
	}
	res.Errors = append(res.Errors, orphans...)
	// A file stored in the run's project from the same bytes (and sidecar) by
	// the same embedder is unchanged: it is not even converted.
	known, projectLanguage, err := storedHashes(ctx, db.New(in.pool), opts.Project)
	if err != nil {
		return res, fmt.Errorf("project %s: %w", opts.Project, err)
	}
	if opts.Language != "" {
		projectLanguage = opts.Language
	}
	// The stored hash covers what shapes the stored chunks besides the bytes:
	// the chunking, so changing it re-ingests everything, and the project's
	// language when it has one (a document that declares none is analysed in
	// it). The embedder is compared on its own (documents.embedder), so
	// reembed can change it alone.
	shape := fmt.Sprintf("%d/%d", in.chunking.ChunkTokens, in.chunking.OverlapTokens)
	if projectLanguage != "" {
		shape += "/" + projectLanguage
	}
	sum := sha256.Sum256([]byte(shape))
	suffix := ":" + hex.EncodeToString(sum[:4])
	identity := EmbedderIdentity(in.embedder)

	// A bulk load that died left its index unbuilt: build it before anything.
	if scope := bulkOf(ctx); scope == nil || scope.lock == nil {
		took := time.Now()
		if built, err := RestoreDeferredIndexes(ctx, in.pool, in.Bulk); err != nil {
			return res, err
		} else if len(built) > 0 {
			res.Steps.IndexBuild += time.Since(took)
			res.Notices = append(res.Notices, fmt.Sprintf("built index %s, which an interrupted bulk load had left unbuilt",
				strings.Join(IndexNames(built), ", ")))
		}
	}

	storedByPath := make(map[string]db.DocumentHashesRow, len(known))
	for _, k := range known {
		storedByPath[k.SourcePath] = k
	}

	byProject := map[string][]parsed{}
	// Paths of files that failed: never pruned, whatever project they were meant for.
	failed := map[string]bool{}
	for _, e := range orphans {
		failed[e.Path] = true
	}
	seenSlug := map[string]string{}
	var toConvert []int
	for i, f := range docs {
		hash := markdown.ContentHash(f.Content, sidecars[f.Path]) + suffix
		if k, ok := storedByPath[f.Path]; ok && k.ContentHash == hash && k.Embedder == identity {
			seenSlug[opts.Project+"\x00"+k.Slug] = f.Path
			byProject[opts.Project] = append(byProject[opts.Project], parsed{file: f, slug: k.Slug, hash: hash})
			continue
		}
		toConvert = append(toConvert, i)
	}
	convertStart := time.Now()
	converted, err := in.convertAll(ctx, docs, toConvert, sidecars)
	res.Steps.Convert = time.Since(convertStart)
	if err != nil {
		return res, err
	}
	// Checked in file order, whichever conversion finished first.
	for k, i := range toConvert {
		f := docs[i]
		doc, err := converted[k].doc, converted[k].err
		if err != nil {
			res.Errors = append(res.Errors, toFileError(f.Path, err))
			failed[f.Path] = true
			continue
		}
		project := opts.Project
		if doc.Project != "" {
			project = doc.Project
		}
		if reason := projectRefusal(ctx, project, opts); reason != "" {
			res.Errors = append(res.Errors, FileError{Path: f.Path, Line: 1, Reason: reason})
			failed[f.Path] = true
			continue
		}
		key := project + "\x00" + doc.Slug
		if other, dup := seenSlug[key]; dup {
			res.Errors = append(res.Errors, FileError{Path: f.Path, Line: 1,
				Reason: fmt.Sprintf("id %q is already used by %s in project %s", doc.Slug, other, project)})
			failed[f.Path] = true
			continue
		}
		seenSlug[key] = f.Path
		if doc.NoText {
			stands := "title"
			if doc.Summary != "" {
				stands = "summary"
			}
			res.Notices = append(res.Notices, fmt.Sprintf("%s: no text: stored with its %s alone", f.Path, stands))
		}
		byProject[project] = append(byProject[project], parsed{file: f, slug: doc.Slug, doc: doc, hash: doc.ContentHash + suffix})
	}
	if _, ok := byProject[opts.Project]; opts.Prune && !ok && (len(known) > 0 || opts.PruneEmpty) {
		// No file is stored in it (every one failed, or named another project):
		// its other documents are still pruned. A project with none, or none
		// yet, has nothing to prune and is not created.
		byProject[opts.Project] = nil
	}

	projects := make([]string, 0, len(byProject))
	for p := range byProject {
		projects = append(projects, p)
	}
	slices.Sort(projects)
	var changedProjects []string
	done := len(res.Errors) - len(orphans)
	for _, project := range projects {
		changed, err := in.ingestProject(ctx, project, byProject[project], failed, opts, &res, &done, len(docs))
		if err != nil {
			res.Elapsed = time.Since(start)
			return res, err
		}
		if changed {
			changedProjects = append(changedProjects, project)
		}
	}
	in.changed(ctx, changedProjects, &res.Notices)
	slices.SortFunc(res.Errors, func(a, b FileError) int { return strings.Compare(a.Path, b.Path) })
	res.Elapsed = time.Since(start)
	return res, nil
}

// conversion is one file's document, or why it has none.
type conversion struct {
	doc *markdown.Document
	err error
}

// convertAll converts docs[i] for each i of which, several at once (each file
// on its own: the results do not depend on the order they finish in).
func (in *Ingester) convertAll(ctx context.Context, docs []File, which []int, sidecars map[string]*markdown.Sidecar) ([]conversion, error) {
	out := make([]conversion, len(which))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(in.workers())
	for k, i := range which {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			f := docs[i]
			doc, err := in.Converter.Document(gctx, f.Path, f.Content, sidecars[f.Path])
			out[k] = conversion{doc: doc, err: err}
			return gctx.Err()
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// storedHashes is what DocumentHashes holds for a project named by key, and
// the project's language: nothing for a project that does not exist yet.
func storedHashes(ctx context.Context, q *db.Queries, project string) ([]db.DocumentHashesRow, string, error) {
	p, err := q.ProjectGetByKey(ctx, project)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	rows, err := documentHashes(ctx, q, p.ID)
	return rows, deref(p.Language), err
}

// documentHashes is DocumentHashes as the caller sees the project.
func documentHashes(ctx context.Context, q *db.Queries, projectID int64) ([]db.DocumentHashesRow, error) {
	viewer := domain.PrincipalFrom(ctx)
	return q.DocumentHashes(ctx, db.DocumentHashesParams{ProjectID: projectID,
		AccessAll: viewer.AllDocuments, AccessGroups: viewer.DocumentGroups()})
}

func (in *Ingester) ingestProject(ctx context.Context, project string, docs []parsed, failed map[string]bool,
	opts Options, res *Result, done *int, total int) (bool, error) {
	q := db.New(in.pool)
	projectID, err := ensureProject(ctx, q, project)
	if err != nil {
		return false, fmt.Errorf("project %s: %w", project, err)
	}
	if project == opts.Project && opts.Language != "" {
		if err := q.ProjectSetLanguage(ctx, db.ProjectSetLanguageParams{ID: projectID, Language: opts.Language}); err != nil {
			return false, fmt.Errorf("project %s: %w", project, err)
		}
	}
	projectRow, err := q.ProjectGetByKey(ctx, project)
	if err != nil {
		return false, fmt.Errorf("project %s: %w", project, err)
	}
	stored, err := documentHashes(ctx, q, projectID)
	if err != nil {
		return false, fmt.Errorf("project %s: %w", project, err)
	}
	storedBySlug := make(map[string]db.DocumentHashesRow, len(stored))
	for _, s := range stored {
		storedBySlug[s.Slug] = s
	}

	var todo []parsed
	var declared []lifecycle.Declared
	identity := EmbedderIdentity(in.embedder)
	chunks := 0
	inRun := make(map[string]bool, len(docs))
	for _, p := range docs {
		inRun[p.file.Path] = true
	}
	for _, p := range docs {
		s, ok := storedBySlug[p.slug]
		if ok && !s.Visible {
			// Its access list hides it from the caller: neither replaced nor described.
			res.Errors = append(res.Errors, FileError{Path: p.file.Path, Line: 1, Reason: fmt.Sprintf(
				"id %q is used by a document of project %s that this key may not see; choose another id", p.slug, project)})
			failed[p.file.Path] = true
			*done++
			continue
		}
		if p.doc == nil || ok && s.ContentHash == p.hash && s.SourcePath == p.file.Path && s.Embedder == identity {
			res.Unchanged++
			*done++
			continue
		}
		// An id belongs to one file. A stored document of another file keeps it
		// unless that file is in this run (it now holds another id) or the run is
		// the whole project (--prune: the file was moved or renamed).
		if ok && s.SourcePath != p.file.Path && s.SourcePath != "" && !opts.Prune &&
			(!inRun[s.SourcePath] || failed[s.SourcePath]) {
			res.Errors = append(res.Errors, FileError{Path: p.file.Path, Line: 1, Reason: fmt.Sprintf(
				"id %q is already used by %s in project %s (stored); if that file was moved or renamed, "+
					"ingest the whole directory with --prune", p.slug, s.SourcePath, project)})
			failed[p.file.Path] = true
			*done++
			continue
		}
		todo = append(todo, p)
		declared = append(declared, lifecycle.Declare(p.doc))
		chunks += len(p.doc.Chunks)
	}
	// Files are the source of truth: a rewrite that undoes a lifecycle change made
	// since the last ingest is applied, and reported (see package lifecycle).
	overrides, err := lifecycle.Overrides(ctx, q, projectID, declared)
	if err != nil {
		return false, fmt.Errorf("project %s: %w", project, err)
	}

	// A large load builds the vector index once, after its batches, instead of
	// inserting into it (see BulkPolicy).
	scope, err := in.startBulk(ctx, chunks, projectID)
	if err != nil {
		return false, fmt.Errorf("project %s: %w", project, err)
	}
	languages, err := q.TextLanguages(ctx)
	if err != nil {
		return false, fmt.Errorf("project %s: %w", project, err)
	}
	st := storing{projectID: projectID, language: deref(projectRow.Language), detector: language.NewDetector(languages),
		storedBySlug: storedBySlug, overrides: overrides, failed: failed,
		progress: opts.Progress, res: res, done: done, total: total, chunks: chunks}
	changed, err := in.storeAll(ctx, todo, &st)
	if scope != nil {
		took, _, buildErr := scope.finish(context.WithoutCancel(ctx), in.Bulk)
		res.Steps.IndexBuild += took
		if err == nil && buildErr != nil {
			err = fmt.Errorf("project %s: %w", project, buildErr)
		}
	}
	if err != nil {
		return changed, err
	}

	if opts.Prune {
		keep := map[string]bool{}
		for _, p := range docs {
			keep[p.slug] = true
		}
		var gone []int64
		for _, s := range stored {
			// A document the caller may not see is not the caller's to prune.
			if !keep[s.Slug] && !failed[s.SourcePath] && s.Visible {
				gone = append(gone, s.ID)
			}
		}
		if len(gone) > 0 {
			err := pgx.BeginFunc(ctx, in.pool, func(tx pgx.Tx) error {
				qtx := db.New(tx)
				if err := qtx.MentionsMarkStale(ctx, projectID); err != nil {
					return err
				}
				if err := qtx.StatsFlushAtCommit(ctx); err != nil {
					return err
				}
				if err := qtx.DocumentDeleteByIDs(ctx, db.DocumentDeleteByIDsParams{ProjectID: projectID, Ids: gone}); err != nil {
					return err
				}
				// A deleted document supersedes nothing any more.
				_, err := lifecycle.RefreshSupersession(ctx, qtx, projectID)
				return err
			})
			if err != nil {
				return changed, fmt.Errorf("prune %s: %w", project, err)
			}
			res.Pruned += len(gone)
			changed = true
		}
	}

	// Every change marked the project, so the mark alone decides: it also catches
	// a run that died before its rebuild when this one changed nothing.
	stale, err := q.MentionsStale(ctx, projectID)
	if err != nil {
		return changed, fmt.Errorf("project %s: %w", project, err)
	}
	if scope := bulkOf(ctx); stale && scope != nil {
		scope.deferMentions(projectID)
	} else if stale {
		start := time.Now()
		if err := in.rebuildTextMentions(ctx, projectID, chunks); err != nil {
			return changed, fmt.Errorf("entity mentions of %s: %w", project, err)
		}
		res.Steps.Mentions += time.Since(start)
	}
	unresolved, err := q.LinkUnresolved(ctx, projectID)
	if err != nil {
		return changed, err
	}
	for _, u := range unresolved {
		res.Notices = append(res.Notices, fmt.Sprintf("%s: %s link %s -> %s waits for a document with that id",
			u.DeclaredBy, u.EdgeType, u.FromSlug, u.ToSlug))
	}
	// A supersedes cycle is reported by every run that stores a document on it:
	// every edge a run makes has one of its documents at an end.
	var storedSlugs []string
	for _, p := range todo {
		if !failed[p.file.Path] {
			storedSlugs = append(storedSlugs, p.slug)
		}
	}
	if len(storedSlugs) > 0 {
		cycles, err := q.EdgeSupersedesCycles(ctx, db.EdgeSupersedesCyclesParams{ProjectID: projectID, Slugs: storedSlugs})
		if err != nil {
			return changed, err
		}
		res.Notices = append(res.Notices, supersedesCycleNotices(cycles)...)
		disagree, err := q.SupersessionDisagreements(ctx, db.SupersessionDisagreementsParams{ProjectID: projectID, Slugs: storedSlugs})
		if err != nil {
			return changed, err
		}
		res.Notices = append(res.Notices, supersessionNotices(disagree)...)
	}
	return changed, nil
}

// supersessionNotices warns of each document whose file says accepted or active
// while a document in force supersedes it: canon treats it as superseded (the
// edge wins), and the file should say so.
func supersessionNotices(rows []db.SupersessionDisagreementsRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprintf("%s says status %s, but %s (status %s) supersedes it: canon treats %s as superseded; "+
			"set `status: superseded` in its frontmatter, or remove the supersedes entry from %s",
			fileOrSlug(r.SourcePath, r.Slug), r.DeclaredStatus, fileOrSlug(r.BySourcePath, r.BySlug), r.ByStatus,
			r.Slug, fileOrSlug(r.BySourcePath, r.BySlug))
	}
	return out
}

// fileOrSlug names a document by its file, or by its id when it has none.
func fileOrSlug(path, slug string) string {
	if path == "" {
		return slug
	}
	return path
}

// storing is what storeAll's workers report into (under its lock).
type storing struct {
	projectID    int64
	language     string // the project's ("": none)
	detector     language.Detector
	storedBySlug map[string]db.DocumentHashesRow
	overrides    map[string]string
	failed       map[string]bool
	progress     Progress
	res          *Result
	done         *int
	total        int
	chunks       int // in the documents to store
}

// storeAll embeds and stores a project's changed documents. Batches of
// documents are embedded and stored by several workers at once (one
// transaction each): HNSW and postings inserts, most of an ingest's time, then
// use every core. Chunk ids are reserved here, in file order, so they do not
// depend on which batch commits first.
func (in *Ingester) storeAll(ctx context.Context, todo []parsed, st *storing) (bool, error) {
	var (
		mu      sync.Mutex
		changed bool
	)
	res := st.res
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(in.workers())
	var reserveErr error
	for _, batch := range batches(todo, batchChunksFor(st.chunks, in.workers())) {
		ids, err := in.reserveIDs(gctx, batch)
		if err != nil {
			reserveErr = err
			break
		}
		g.Go(func() error {
			start := time.Now()
			for i := range batch {
				batch[i].language = st.detector.Of(batch[i].doc.Language, st.language, documentText(batch[i].doc))
			}
			errs, embedding, err := in.storeWithFallback(gctx, st.projectID, batch, ids)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			res.Steps.Embed += embedding
			res.Steps.Store += time.Since(start) - embedding
			for i, p := range batch {
				_, existed := st.storedBySlug[p.doc.Slug]
				*st.done++
				if st.progress != nil {
					st.progress(*st.done, st.total)
				}
				if errs[i] != nil {
					res.Errors = append(res.Errors, FileError{Path: p.file.Path, Line: 1, Reason: "not stored: " + errs[i].Error()})
					st.failed[p.file.Path] = true
					continue
				}
				changed = true
				if notice, ok := st.overrides[p.doc.Slug]; ok {
					res.Notices = append(res.Notices, notice)
				}
				res.Chunks += len(p.doc.Chunks)
				if existed {
					res.Updated++
				} else {
					res.Created++
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return changed, err
	}
	return changed, reserveErr
}

// A batch is one embedder call and one transaction (one COPY, so the statement
// triggers that keep the BM25 statistics run once per batch, not once per
// file). It holds minBatchChunks to maxBatchChunks chunks: a large load's
// batches are large, because each batch updates the document frequency of
// every lexeme it holds, whatever its size (a 100,000-chunk load: 146 s in
// batches of 256, 119 s in batches of 1,024; bench/results/ingest-store.md),
// and a smaller load still gives every worker a batch.
const (
	minBatchChunks = 256
	maxBatchChunks = 1024
)

// batchChunksFor is the batch size for a load of chunks chunks over workers.
func batchChunksFor(chunks, workers int) int {
	return max(minBatchChunks, min(maxBatchChunks, chunks/max(workers, 1)))
}

// batches splits documents into runs of at most limit chunks (a larger
// document makes a batch of its own).
func batches(todo []parsed, limit int) [][]parsed {
	var out [][]parsed
	for len(todo) > 0 {
		n, chunks := 0, 0
		for n < len(todo) && (n == 0 || chunks+len(todo[n].doc.Chunks) <= limit) {
			chunks += len(todo[n].doc.Chunks)
			n++
		}
		out = append(out, todo[:n])
		todo = todo[n:]
	}
	return out
}

// workers is how many batches are stored at once.
func (in *Ingester) workers() int {
	if in.Workers > 0 {
		return in.Workers
	}
	return DefaultWorkers()
}

// DefaultWorkers is one worker per core, at most four: beyond that the
// statistics lock at the end of each batch and the database's own cores decide.
func DefaultWorkers() int { return min(runtime.GOMAXPROCS(0), 4) }

// reserveIDs takes the chunk ids of a batch, per document.
func (in *Ingester) reserveIDs(ctx context.Context, batch []parsed) ([][]int64, error) {
	n := 0
	for _, p := range batch {
		n += len(p.doc.Chunks)
	}
	ids, err := db.New(in.pool).ChunkReserveIDs(ctx, int32(n))
	if err != nil {
		return nil, fmt.Errorf("reserve chunk ids: %w", err)
	}
	if len(ids) != n {
		return nil, fmt.Errorf("reserve chunk ids: got %d for %d chunks", len(ids), n)
	}
	slices.Sort(ids)
	out := make([][]int64, len(batch))
	for i, p := range batch {
		out[i], ids = ids[:len(p.doc.Chunks)], ids[len(p.doc.Chunks):]
	}
	return out, nil
}

// storeWithFallback embeds and stores a batch in one transaction; when that
// fails, each file on its own, so one bad file costs only itself. errs[i] is
// file i's failure; err a failure of the run (embedder, cancellation).
// embedding is the time the embedder took.
func (in *Ingester) storeWithFallback(ctx context.Context, projectID int64, batch []parsed, ids [][]int64) (
	errs []error, embedding time.Duration, err error) {
	start := time.Now()
	vectors, err := in.embedBatch(ctx, batch)
	embedding = time.Since(start)
	if err != nil {
		return nil, embedding, err
	}
	errs = make([]error, len(batch))
	if err := in.storeBatch(ctx, projectID, batch, vectors, ids); err == nil {
		return errs, embedding, nil
	}
	for i, p := range batch {
		if ctx.Err() != nil {
			return nil, embedding, ctx.Err()
		}
		errs[i] = in.storeBatch(ctx, projectID, []parsed{p}, vectors[i:i+1], ids[i:i+1])
	}
	if ctx.Err() != nil {
		return nil, embedding, ctx.Err()
	}
	return errs, embedding, nil
}

func ensureProject(ctx context.Context, q *db.Queries, key string) (int64, error) {
	for range 3 {
		ids, err := q.ProjectEnsure(ctx, key)
		if err != nil {
			return 0, err
		}
		if len(ids) > 0 {
			return ids[0], nil
		}
	}
	return 0, errors.New("could not create the project")
}

// chunkEmbedText is what the embedder sees for a chunk: the title and heading
// path situate the passage, as a reader would see it. Reembed rebuilds it from
// the stored rows, so the two always agree.
func chunkEmbedText(title string, headingPath []string, text string) string {
	var b strings.Builder
	b.WriteString(title)
	for _, h := range headingPath {
		if h != title {
			b.WriteString(" > ")
			b.WriteString(h)
		}
	}
	b.WriteString("\n")
	b.WriteString(text)
	return b.String()
}

// entityEmbedText is the text embedded for an entity page.
func entityEmbedText(name string, aliases []string, role string, facts []string, summary string) string {
	parts := []string{name}
	parts = append(parts, aliases...)
	if role != "" {
		parts = append(parts, role)
	}
	parts = append(parts, facts...)
	if summary != "" {
		parts = append(parts, summary)
	}
	return strings.Join(parts, ". ")
}

func (in *Ingester) embedBatch(ctx context.Context, batch []parsed) ([][]pgvector.Vector, error) {
	var texts []string
	for _, p := range batch {
		for _, c := range p.doc.Chunks {
			texts = append(texts, chunkEmbedText(p.doc.Title, c.HeadingPath, c.Text))
		}
		if d := p.doc; d.EntityType != "" {
			texts = append(texts, entityEmbedText(d.Title, d.Aliases, d.Role, d.Facts, d.Summary))
		}
	}
	vecs, err := in.embedder.EmbedDocuments(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("embed: %w", err)
	}
	if len(vecs) != len(texts) {
		return nil, fmt.Errorf("embed: embedder returned %d vectors for %d texts", len(vecs), len(texts))
	}
	out := make([][]pgvector.Vector, len(batch))
	k := 0
	for i, p := range batch {
		n := len(p.doc.Chunks)
		if p.doc.EntityType != "" {
			n++
		}
		for j := 0; j < n; j++ {
			out[i] = append(out[i], pgvector.NewVector(vecs[k]))
			k++
		}
	}
	return out, nil
}

// storeBatch replaces the rows of a batch of documents in one transaction: a
// failure leaves what was stored before untouched. vectors[i] holds document i's
// chunk vectors (and its entity vector last), ids[i] its chunk ids.
//
// The graph links go last, under a per-project lock held to the commit: links
// join documents of other batches, and a batch stored beside this one is
// visible only once it has committed. Taking the lock after the COPY keeps the
// slow part (HNSW and postings inserts) parallel.
func (in *Ingester) storeBatch(ctx context.Context, projectID int64, batch []parsed, vectors [][]pgvector.Vector, ids [][]int64) error {
	return pgx.BeginFunc(ctx, in.pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		var rows []db.ChunkInsertCopyParams
		docIDs := make([]int64, len(batch))
		entitiesChanged := false
		for i, p := range batch {
			doc, err := in.storeDocument(ctx, q, projectID, p, vectors[i], ids[i])
			if err != nil {
				return inFile(batch, p, err)
			}
			docIDs[i] = doc.id
			rows = append(rows, doc.chunks...)
			entitiesChanged = entitiesChanged || doc.entityChanged
		}
		if _, err := q.ChunkInsertCopy(ctx, rows); err != nil {
			return describe("chunks", err)
		}
		if err := q.GraphLock(ctx, projectID); err != nil {
			return describe("links", err)
		}
		// The documents' own body mentions wait for the rebuild; a changed
		// entity may change every document's.
		if err := q.MentionsPendingAdd(ctx, db.MentionsPendingAddParams{ProjectID: projectID, DocumentIds: docIDs}); err != nil {
			return describe("mentions", err)
		}
		if entitiesChanged {
			if err := q.MentionsMarkStale(ctx, projectID); err != nil {
				return describe("mentions", err)
			}
		}
		if err := q.StatsFlushAtCommit(ctx); err != nil {
			return describe("statistics", err)
		}
		return in.storeLinks(ctx, q, projectID, batch, docIDs)
	})
}

// inFile names the file an error belongs to when the batch holds several.
func inFile(batch []parsed, p parsed, err error) error {
	if len(batch) > 1 {
		return fmt.Errorf("%s: %w", p.file.Path, err)
	}
	return err
}

// storedDocument is what storeDocument leaves to its batch.
type storedDocument struct {
	id int64
	// chunks: the rows of the batch's COPY.
	chunks []db.ChunkInsertCopyParams
	// entityChanged: the document is an entity page, or was one.
	entityChanged bool
}

// storeDocument writes one document's rows except its chunks, which it returns
// for the batch's COPY (its old chunks are deleted here), and its graph links,
// which storeBatch writes last.
func (in *Ingester) storeDocument(ctx context.Context, q *db.Queries, projectID int64, p parsed,
	vectors []pgvector.Vector, ids []int64) (storedDocument, error) {
	d := p.doc
	row, err := q.DocumentUpsert(ctx, db.DocumentUpsertParams{
		ProjectID:         projectID,
		Slug:              d.Slug,
		Title:             d.Title,
		SourcePath:        d.SourcePath,
		SourceType:        d.SourceType,
		Tags:              nonNil(d.Tags),
		Owners:            nonNil(d.Owners),
		ContentHash:       p.hash,
		EffectiveDate:     d.EffectiveDate,
		CanonicalType:     optional(d.CanonicalType),
		DeclaredStatus:    optional(d.Status),
		RetrievalPriority: int32(d.RetrievalPriority),
		Tier:              d.Tier,
		EvidenceTier:      optional(d.EvidenceTier),
		EntityType:        optional(d.EntityType),
		Summary:           d.Summary,
		SummaryLinks:      string(markdown.EncodeWikilinks(d.SummaryWikilinks)),
		Embedder:          EmbedderIdentity(in.embedder),
		Access:            nonNil(d.Access),
		Language:          p.language,
		// As its attendee mentions (storeMentions): anyone but the page itself.
		Attended: slices.ContainsFunc(d.Attendees, func(a string) bool { return a != d.Slug }),
	})
	if err != nil {
		return storedDocument{}, describe("document", err)
	}
	docID := row.ID
	// A document just inserted has no chunks yet (a first load is all such).
	if !row.Inserted {
		if err := q.ChunkDeleteByDocument(ctx, db.ChunkDeleteByDocumentParams{ProjectID: projectID, DocumentID: docID}); err != nil {
			return storedDocument{}, describe("chunks", err)
		}
	}
	rows := make([]db.ChunkInsertCopyParams, len(d.Chunks))
	for i, c := range d.Chunks {
		rows[i] = db.ChunkInsertCopyParams{
			ID: ids[i], ProjectID: projectID, DocumentID: docID, Ordinal: int32(c.Ordinal),
			HeadingPath: nonNil(c.HeadingPath), Text: c.Text, TokenCount: int32(c.TokenCount),
			IsSummary: c.IsSummary, Embedding: &vectors[i], Links: markdown.EncodeWikilinks(c.Wikilinks),
		}
	}

	if d.CanonicalType != "" {
		err = q.NodeUpsert(ctx, db.NodeUpsertParams{ProjectID: projectID, DocumentID: docID, NodeType: d.CanonicalType})
	} else {
		err = q.NodeDeleteByDocument(ctx, db.NodeDeleteByDocumentParams{ProjectID: projectID, DocumentID: docID})
	}
	if err != nil {
		return storedDocument{}, describe("graph node", err)
	}
	entityChanged, err := in.storeEntity(ctx, q, projectID, docID, d, vectors)
	if err != nil {
		return storedDocument{}, err
	}
	if err := in.storeMentions(ctx, q, projectID, docID, d); err != nil {
		return storedDocument{}, err
	}
	return storedDocument{id: docID, chunks: rows, entityChanged: entityChanged}, nil
}

// storeLinks replaces the graph links the batch's documents declare and
// resolves every link that touches them, a statement each for the whole batch:
// they run under the project's graph lock, which the other workers wait on.
func (in *Ingester) storeLinks(ctx context.Context, q *db.Queries, projectID int64, batch []parsed, docIDs []int64) error {
	if err := q.LinkDeleteByDocuments(ctx, db.LinkDeleteByDocumentsParams{ProjectID: projectID, DocumentIds: docIDs}); err != nil {
		return describe("links", err)
	}
	links := db.LinkInsertParams{ProjectID: projectID}
	slugs := make([]string, len(batch))
	for i, p := range batch {
		slugs[i] = p.doc.Slug
		for _, l := range p.doc.Links {
			links.DeclaredBy = append(links.DeclaredBy, docIDs[i])
			links.FromSlugs = append(links.FromSlugs, l.From)
			links.ToSlugs = append(links.ToSlugs, l.To)
			links.EdgeTypes = append(links.EdgeTypes, l.EdgeType)
			links.Weights = append(links.Weights, l.Weight)
			links.Provenances = append(links.Provenances, l.Provenance)
		}
	}
	if len(links.DeclaredBy) > 0 {
		if err := q.LinkInsert(ctx, links); err != nil {
			return describe("links", err)
		}
	}
	if err := q.EdgeDeleteDeclaredBy(ctx, db.EdgeDeleteDeclaredByParams{ProjectID: projectID, DocumentIds: docIDs}); err != nil {
		return describe("edges", err)
	}
	// Frontmatter wins over lifecycle edges too (lifecycle.Overrides has said which).
	if err := lifecycle.DropContradictedEdges(ctx, q, projectID, docIDs); err != nil {
		return describe("edges", err)
	}
	if _, err := q.EdgeResolve(ctx, db.EdgeResolveParams{ProjectID: projectID, Slugs: slugs}); err != nil {
		return describe("edges", err)
	}
	// What a superseding document retires follows its edges and statuses in
	// the same transaction (ingestProject reports the files that disagree).
	if _, err := lifecycle.RefreshSupersession(ctx, q, projectID); err != nil {
		return describe("edges", err)
	}
	return nil
}

// storeEntity writes or deletes the document's entity; changed says whether
// the project's entities changed (the document is an entity page, or was one).
func (in *Ingester) storeEntity(ctx context.Context, q *db.Queries, projectID, docID int64, d *markdown.Document,
	vectors []pgvector.Vector) (changed bool, err error) {
	if d.EntityType == "" {
		n, err := q.EntityDeleteByDocument(ctx, db.EntityDeleteByDocumentParams{ProjectID: projectID, DocumentID: docID})
		if err != nil {
			return false, describe("entity", err)
		}
		return n > 0, nil
	}
	entityID, err := q.EntityUpsert(ctx, db.EntityUpsertParams{
		ProjectID: projectID, DocumentID: docID, Slug: d.Slug, EntityType: d.EntityType, Name: d.Title,
		Aliases: nonNil(d.Aliases), Role: d.Role, Facts: nonNil(d.Facts), Embedding: &vectors[len(vectors)-1],
	})
	if err != nil {
		return true, describe("entity", err)
	}
	if err := q.TeamMembersDelete(ctx, db.TeamMembersDeleteParams{ProjectID: projectID, TeamID: entityID}); err != nil {
		return true, describe("team members", err)
	}
	if len(d.Members) > 0 {
		if err := q.TeamMembersInsert(ctx, db.TeamMembersInsertParams{ProjectID: projectID, TeamID: entityID, MemberSlugs: d.Members}); err != nil {
			return true, describe("team members", err)
		}
	}
	return true, nil
}

// Link strengths of declared mentions. Text mentions count occurrences instead.
const (
	attendeeStrength    = 1.0
	frontmatterStrength = 1.0
)

func (in *Ingester) storeMentions(ctx context.Context, q *db.Queries, projectID, docID int64, d *markdown.Document) error {
	if err := q.MentionDeleteDeclared(ctx, db.MentionDeleteDeclaredParams{ProjectID: projectID, DocumentID: docID}); err != nil {
		return describe("mentions", err)
	}
	p := db.MentionInsertParams{ProjectID: projectID, DocumentID: docID}
	add := func(slugs []string, strength float32, source string) {
		for _, s := range slugs {
			if s == d.Slug || slices.Contains(p.EntitySlugs, s) && slices.Contains(p.Sources, source) {
				continue
			}
			p.EntitySlugs = append(p.EntitySlugs, s)
			p.Strengths = append(p.Strengths, strength)
			p.Sources = append(p.Sources, source)
		}
	}
	add(d.Attendees, attendeeStrength, "attendee")
	// Owners and explicit entity links both come from frontmatter; one row each.
	explicit := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(d.Owners), d.Entities...))))
	add(explicit, frontmatterStrength, "frontmatter")
	if len(p.EntitySlugs) == 0 {
		return nil
	}
	if err := q.MentionInsert(ctx, p); err != nil {
		return describe("mentions", err)
	}
	return nil
}

// analyzeMinChunks: a run that stored at least this many chunks into a project
// analyses the tables whose statistics are behind before it reads them back;
// smaller runs leave that to autovacuum (a table never analysed is analysed
// after any run). Under a stream of small ingests, one of them every so often
// found a shared table behind and analysed it in the request.
const analyzeMinChunks = 1000

// mentionsIncrementalShare: the mention rebuild reads only the documents marked
// since the last one when their chunks are at most this share of the project's;
// beyond it, one pass over every name through the tsv index costs less than
// matching that many chunks against every name.
const mentionsIncrementalShare = 0.1

// rebuildTextMentions brings a project's body mentions of entities up to date:
// those of the documents written since the last rebuild or, when its entities
// changed (or those documents are a large part of it), every document's. It
// first analyses the project's tables whose statistics a load of stored chunks
// left missing or behind: the rebuild's plan (and the next questions') depends
// on them.
func (in *Ingester) rebuildTextMentions(ctx context.Context, projectID int64, stored int) error {
	if _, err := db.New(in.pool).AnalyzeStale(ctx, db.AnalyzeStaleParams{
		ProjectID: projectID, IncludeBehind: stored >= analyzeMinChunks}); err != nil {
		return fmt.Errorf("statistics: %w", err)
	}
	return pgx.BeginFunc(ctx, in.pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		pending, err := q.MentionsPending(ctx, projectID)
		if err != nil {
			return err
		}
		ids, versions := make([]int64, len(pending)), make([]string, len(pending))
		for i, d := range pending {
			ids[i], versions[i] = d.DocumentID, d.Version
		}
		whole, err := q.MentionsStaleProject(ctx, projectID)
		if err != nil {
			return err
		}
		if !whole && len(ids) > 0 {
			n, err := q.MentionsPendingChunks(ctx, db.MentionsPendingChunksParams{ProjectID: projectID, DocumentIds: ids})
			if err != nil {
				return err
			}
			whole = float64(n.Pending) > mentionsIncrementalShare*float64(n.Total)
		}
		switch {
		case whole:
			if err := q.MentionDeleteText(ctx, projectID); err != nil {
				return err
			}
			if _, err := q.MentionRebuildText(ctx, projectID); err != nil {
				return err
			}
			if err := q.MentionsMarkFresh(ctx, projectID); err != nil {
				return err
			}
		case len(ids) > 0:
			if err := q.MentionDeleteTextOf(ctx, db.MentionDeleteTextOfParams{ProjectID: projectID, DocumentIds: ids}); err != nil {
				return err
			}
			if _, err := q.MentionRebuildTextOf(ctx, db.MentionRebuildTextOfParams{ProjectID: projectID, DocumentIds: ids}); err != nil {
				return err
			}
		}
		return q.MentionsPendingDone(ctx, db.MentionsPendingDoneParams{
			ProjectID: projectID, DocumentIds: ids, Versions: versions})
	})
}

func toFileError(path string, err error) FileError {
	var pe *markdown.ParseError
	if errors.As(err, &pe) {
		// A sidecar's error names the sidecar.
		return FileError{Path: pe.Path, Line: pe.Line, Reason: pe.Reason}
	}
	return FileError{Path: path, Reason: err.Error()}
}

// documentText is what language detection reads of a document: its title,
// summary and chunks, up to what language.Detect reads.
func documentText(d *markdown.Document) string {
	var b strings.Builder
	b.WriteString(d.Title)
	b.WriteString("\n")
	b.WriteString(d.Summary)
	for _, c := range d.Chunks {
		if b.Len() > language.DetectBytes {
			break
		}
		b.WriteString("\n")
		b.WriteString(c.Text)
	}
	return b.String()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func describe(what string, err error) error { return fmt.Errorf("store %s: %w", what, err) }

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// pairSidecars splits a run's files into documents and the sidecars that go
// with them (by the path each sidecar names); a sidecar whose file is not in
// the run is an error.
func pairSidecars(files []File) (docs []File, sidecars map[string]*markdown.Sidecar, orphans []FileError) {
	sidecars = map[string]*markdown.Sidecar{}
	present := map[string]bool{}
	for _, f := range files {
		if convert.IsSidecar(f.Path) {
			sidecars[convert.SidecarOf(f.Path)] = &markdown.Sidecar{Path: f.Path, Content: f.Content}
			continue
		}
		docs = append(docs, f)
		present[f.Path] = true
	}
	for of, sc := range sidecars {
		if !present[of] {
			orphans = append(orphans, FileError{Path: sc.Path,
				Reason: fmt.Sprintf("a sidecar for %s, which is not there (name a sidecar <file>%s)", of, markdown.SidecarSuffix)})
		}
	}
	slices.SortFunc(orphans, func(a, b FileError) int { return strings.Compare(a.Path, b.Path) })
	return docs, sidecars, orphans
}

// cleanPath is a file's path as documents store it (source_path): relative
// to the knowledge root, '/'-separated ('\' separates too, as in slugs) and
// path.Clean'ed ("./a//b.md" is a/b.md). An absolute path, or one with a ".."
// element, names no file under the root: refused, naming it.
func cleanPath(p string) (string, error) {
	slashed := strings.ReplaceAll(p, "\\", "/")
	switch {
	case strings.TrimSpace(slashed) == "":
		return "", &domain.InvalidError{Message: "every file needs a path (relative to the knowledge root)"}
	case strings.HasPrefix(slashed, "/"):
		return "", &domain.InvalidError{Message: fmt.Sprintf("path %q is absolute: send paths relative to the knowledge root", p)}
	case slices.Contains(strings.Split(slashed, "/"), ".."):
		return "", &domain.InvalidError{Message: fmt.Sprintf(`path %q has a ".." element: send paths relative to the knowledge root, without ".."`, p)}
	}
	clean := path.Clean(slashed)
	if clean == "." {
		return "", &domain.InvalidError{Message: fmt.Sprintf("path %q names no file", p)}
	}
	return clean, nil
}

// cleanPaths cleans every file's path (cleanPath) and refuses a path named
// twice: two files for one document, whichever came last would win.
func cleanPaths(files []File) ([]File, error) {
	out := make([]File, len(files))
	sent := make(map[string]string, len(files))
	for i, f := range files {
		p, err := cleanPath(f.Path)
		if err != nil {
			return nil, err
		}
		if first, twice := sent[p]; twice {
			as := ""
			if first != f.Path {
				as = fmt.Sprintf(" (as %q and %q)", first, f.Path)
			}
			return nil, &domain.InvalidError{Message: fmt.Sprintf("path %q is named twice in one ingest%s: send each file once "+
				"(folders ingested together must not hold the same relative path)", p, as)}
		}
		sent[p] = f.Path
		out[i] = File{Path: p, Content: f.Content}
	}
	return out, nil
}

// ReadDirs collects the files canon ingests under each directory (by
// extension, see convert.Extensions, with their sidecars; hidden folders
// skipped), or the file itself and its sidecar when a path names a file, with
// paths relative to the directory given. A file is read up to one byte past
// its format's size limit (the converter reports it), and a file that vanishes
// while the tree is read is left out.
func ReadDirs(paths []string) ([]File, error) {
	var files []File
	add := func(path, rel string) error {
		b, err := readCapped(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		files = append(files, File{Path: filepath.ToSlash(rel), Content: b})
		return nil
	}
	for _, root := range paths {
		info, err := os.Stat(root)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			if err := add(root, filepath.Base(root)); err != nil {
				return nil, err
			}
			if err := add(root+markdown.SidecarSuffix, filepath.Base(root)+markdown.SidecarSuffix); err != nil {
				return nil, err
			}
			continue
		}
		err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) && path != root {
				return nil
			}
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != root && strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir
				}
				return nil
			}
			if !Ingestible(d.Name()) {
				return nil
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			return add(path, rel)
		})
		if err != nil {
			return nil, err
		}
	}
	return files, nil
}

// Ingestible reports whether a file of this name is read by ReadDirs: a
// document of a supported format or a sidecar.
func Ingestible(name string) bool { return convert.Supported(name) || convert.IsSidecar(name) }

// readCapped reads a file up to one byte past its size limit.
func readCapped(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, convert.DefaultLimits().MaxBytes(path)+1))
}
