// Package embed turns text into vectors.
package embed
