package markdown

import "fmt"

// ParseError reports why a file was rejected and where: Line counts lines of
// the file as stored (1-based, the opening "---" of the frontmatter is line 1),
// whatever the line endings.
type ParseError struct {
	Path   string
	Line   int
	Reason string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Reason)
}

func errorf(path string, line int, format string, args ...any) *ParseError {
	return &ParseError{Path: path, Line: line, Reason: fmt.Sprintf(format, args...)}
}
