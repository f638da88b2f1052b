// Package web holds the built web chat (web/dist, made by Vite from web/src and
// committed, like gen/), so `go build` embeds it and needs no Node.
package web

import (
	"embed"
	"io/fs"
)

//go:embed all:dist
var dist embed.FS

// Assets is the built app: index.html and assets/.
func Assets() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // dist is embedded at build time; a missing directory fails the build first
	}
	return sub
}
