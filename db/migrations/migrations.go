// Package migrations embeds canon's goose SQL migrations so the binary can run
// them (`canon migrate`); the same files work with `goose -dir db/migrations`.
package migrations

import "embed"

// FS holds the *.sql migrations.
//
//go:embed *.sql
var FS embed.FS
