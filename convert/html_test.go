package convert

import (
	"reflect"
	"strings"
	"testing"
)

const page = `<!DOCTYPE html>
<html><head><title>Cache layer | Acme wiki</title>
<style>body { color: red }</style><script>var secret = "script text";</script></head>
<body>
<header><a href="/">Acme wiki</a> site banner</header>
<nav><ul><li>Home</li><li>Navigation link</li></ul></nav>
<div role="navigation">Breadcrumbs</div>
<main>
<header><p>Posted by Dana</p></header>
<h1>Cache <em>layer</em> standard</h1>
<p>We standardise on   Redis 7.
It replaces the per-service caches.</p>
<div hidden>Hidden draft text</div>
<h2>Expiry</h2>
<p>Entries expire after five minutes.<br>Keys are namespaced.</p>
<h3>Exceptions</h3>
<ol start="3"><li>Sessions <a href="https://example.com/sessions">see sessions</a>
  <ul><li>nested item</li></ul></li><li>Feature flags</li></ol>
<h2>Sizes</h2>
<table><thead><tr><th>Service</th><th>Memory</th></tr></thead>
<tbody><tr><td>orders</td><td>2 GB</td></tr><tr><td></td><td></td></tr></tbody></table>
<pre><code class="language-sh">redis-cli FLUSHALL
  # careful</code></pre>
<noscript>Enable JavaScript</noscript>
<form><input name="q"><button>Search</button></form>
</main>
<footer>Copyright Acme</footer>
</body></html>`

func TestHTML(t *testing.T) {
	t.Parallel()
	var c Converter
	doc := convert(t, &c, "wiki/cache.html", []byte(page), nil)
	if doc.Title != "Cache layer standard" || doc.Slug != "wiki/cache" || doc.SourceType != "html" {
		t.Errorf("document: %+v", doc)
	}
	want := [][]string{
		{"Cache layer standard", "Posted by Dana"},
		{"Cache layer standard", "We standardise on Redis 7. It replaces the per-service caches."},
		{"Cache layer standard", "Expiry", "Entries expire after five minutes.\nKeys are namespaced."},
		{"Cache layer standard", "Expiry", "Exceptions", "3. Sessions see sessions (https://example.com/sessions)\n   - nested item\n4. Feature flags"},
		{"Cache layer standard", "Sizes", "Service | Memory\norders | 2 GB\n\n```sh\nredis-cli FLUSHALL\n  # careful\n```"},
	}
	if got := sections(doc); !reflect.DeepEqual(got, want) {
		t.Errorf("chunks:\n got %q\nwant %q", got, want)
	}
	all := strings.Join(strings.Fields(strings.Join(flatten(sections(doc)), " ")), " ")
	for _, gone := range []string{"color", "secret", "site banner", "Navigation link", "Breadcrumbs", "Hidden draft",
		"Enable JavaScript", "Search", "Copyright"} {
		if strings.Contains(all, gone) {
			t.Errorf("%q should have been dropped", gone)
		}
	}
}

func flatten(s [][]string) []string {
	var out []string
	for _, x := range s {
		out = append(out, x...)
	}
	return out
}

func TestHTMLTitleAndEncoding(t *testing.T) {
	t.Parallel()
	var c Converter
	// No <h1>: the <title> titles the document and starts every heading path.
	latin1 := []byte("<html><head><meta charset=\"windows-1252\"><title>Caf\xe9 notes</title></head>" +
		"<body><h2>Men\xfc</h2><p>Cr\xe8me br\xfbl\xe9e &amp; more</p></body></html>")
	doc := convert(t, &c, "cafe.htm", latin1, nil)
	want := [][]string{{"Café notes", "Menü", "Crème brûlée & more"}}
	if got := sections(doc); doc.Title != "Café notes" || !reflect.DeepEqual(got, want) {
		t.Errorf("title %q, chunks %q", doc.Title, got)
	}
	// Neither: the file name.
	doc = convert(t, &c, "plain-page.html", []byte("<p>Just text.</p>"), nil)
	if doc.Title != "plain-page" || doc.Summary != "Just text." {
		t.Errorf("document: %+v", doc)
	}
}

func TestHTMLTooDeep(t *testing.T) {
	t.Parallel()
	var c Converter
	deep := strings.Repeat("<div>", 600) + "text" + strings.Repeat("</div>", 600)
	if msg := convertErr(t, &c, "deep.html", []byte(deep)); msg != "unreadable HTML: open stack of elements exceeds 512 nodes" {
		t.Errorf("deep: %s", msg)
	}
}
