package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/canonkb/canon/domain"
)

// DefaultDebounce is how long Watch waits after the last change of a burst.
const DefaultDebounce = 500 * time.Millisecond

// WatchOptions configure Watch.
type WatchOptions struct {
	// Project receives files whose metadata names none.
	Project string
	// Language is stored on Project as Options.Language is.
	Language string
	// Debounce is the quiet time after a change before the folders are read
	// again (0: DefaultDebounce); a stream of changes is still read at least
	// every ten debounces.
	Debounce time.Duration
	// OnRun receives each run's result, or the error that stopped a run
	// (Watch keeps going and tries again).
	OnRun func(Result, error)
}

// Watch keeps a project in step with folders until ctx ends: an ingest with
// prune at the start, then another after each burst of changes (files
// created, written, renamed or removed, folders too), debounced. A run reads
// the folders whole, so no change is missed however the events arrive;
// unchanged files cost a read and are not converted. Each file is stored in a
// transaction of its own, so stopping at any moment leaves every document as
// it was or as its file now is. A bad file is reported and the watch goes on.
func (in *Ingester) Watch(ctx context.Context, roots []string, opts WatchOptions) error {
	debounce := opts.Debounce
	if debounce <= 0 {
		debounce = DefaultDebounce
	}
	report := opts.OnRun
	if report == nil {
		report = func(Result, error) {}
	}
	w, err := fsnotify.NewBufferedWatcher(1024)
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer w.Close()
	for _, root := range roots {
		info, err := os.Stat(root)
		if err != nil {
			return err
		}
		if !info.IsDir() {
			return fmt.Errorf("%s is not a folder: --watch watches folders", root)
		}
		if err := watchTree(w, root); err != nil {
			return err
		}
	}

	// failed is set when a run could not complete (database down): it is
	// tried again after a while even without further changes.
	runOnce := func() (failed bool) {
		files, err := ReadDirs(roots)
		if docs, _, _ := pairSidecars(files); err == nil && len(docs) == 0 {
			// Ingest refuses to prune with no files; a watch waits for some.
			report(Result{Notices: []string{fmt.Sprintf("the watched folders hold no documents: nothing is pruned "+
				"(an empty folder is not taken to mean that every document of project %s is gone)", opts.Project)}}, nil)
			return false
		}
		if err == nil {
			var res Result
			res, err = in.Ingest(ctx, files, Options{Project: opts.Project, Language: opts.Language, Prune: true})
			if err == nil {
				report(res, nil)
				return false
			}
		}
		if ctx.Err() == nil {
			report(Result{}, err)
		}
		// Files refused as they are would be refused again: wait for a change.
		return !domain.IsInvalid(err)
	}
	timer := time.NewTimer(0) // the first run
	var first time.Time       // first change of the burst being waited out
	schedule := func(now time.Time) {
		if first.IsZero() {
			first = now
		}
		// Wait for quiet, but no longer than ten debounces from the burst's start.
		delay := min(debounce, max(first.Add(10*debounce).Sub(now), 0))
		timer.Reset(delay)
	}
	for {
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if ev.Has(fsnotify.Create) && !hidden(ev.Name) {
				if info, err := os.Stat(ev.Name); err == nil && info.IsDir() {
					// A folder that arrives (mkdir, or moved in) is watched with what it holds.
					if err := watchTree(w, ev.Name); err != nil && !errors.Is(err, fs.ErrNotExist) {
						report(Result{}, err)
					}
				}
			}
			if relevant(ev) {
				schedule(time.Now())
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			// Events may have been lost (a queue overflow): read everything again.
			report(Result{}, fmt.Errorf("watch: %w", err))
			schedule(time.Now())
		case <-timer.C:
			first = time.Time{}
			if runOnce() && ctx.Err() == nil {
				timer.Reset(10 * debounce)
			}
		}
	}
}

// watchTree watches a folder and every folder under it, hidden ones skipped
// as ReadDirs skips them.
func watchTree(w *fsnotify.Watcher, root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && path != root {
			return nil
		}
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if path != root && hidden(path) {
			return filepath.SkipDir
		}
		if err := w.Add(path); err != nil {
			return fmt.Errorf("watch %s: %w", path, err)
		}
		return nil
	})
}

// relevant reports whether an event can change what ReadDirs reads: a change
// to a file it reads, or to something that may be a folder (a name without an
// extension, created, removed or renamed). Editors' hidden temporary files and
// bare permission changes are not.
func relevant(ev fsnotify.Event) bool {
	name := filepath.Base(ev.Name)
	if hidden(ev.Name) || !ev.Has(fsnotify.Create|fsnotify.Write|fsnotify.Remove|fsnotify.Rename) {
		return false
	}
	if Ingestible(name) {
		return true
	}
	return filepath.Ext(name) == "" && !ev.Has(fsnotify.Write)
}

func hidden(path string) bool { return strings.HasPrefix(filepath.Base(path), ".") }
