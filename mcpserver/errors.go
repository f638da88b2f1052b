package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"connectrpc.com/connect"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CodeServerError is the JSON-RPC code of a canon error that is neither a bad
// argument nor a missing resource (unauthenticated, permission_denied,
// unavailable, ...): JSON-RPC's first implementation-defined server error. Its
// data holds the Connect code ({"code": "permission_denied"}), its message is
// "code: message" as a tool error's text is.
const CodeServerError = -32000

// uniformErrors makes every error canon's MCP server answers read as the
// Connect API's: a tool's bad argument, which the SDK's schema validation
// words in its own terms, becomes invalid_argument like canon's own checks; a
// resource read's canon error, which the SDK would send with JSON-RPC code 0
// (not a valid code), gets a JSON-RPC code.
func uniformErrors(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if r, ok := res.(*mcp.CallToolResult); ok && r.IsError && len(r.Content) == 1 {
			if tc, ok := r.Content[0].(*mcp.TextContent); ok {
				tc.Text = argumentError(tc.Text)
			}
		}
		var ce *connect.Error
		if err != nil && errors.As(err, &ce) {
			return nil, rpcError(ce)
		}
		return res, err
	}
}

// schemaPrefix starts the SDK's message for arguments its schema refuses.
const schemaPrefix = `validating "arguments": `

// argumentError rewords the SDK's schema error as invalid_argument; any other text is kept.
func argumentError(text string) string {
	msg, ok := strings.CutPrefix(text, schemaPrefix)
	if !ok {
		return text
	}
	if strings.HasPrefix(msg, "unmarshaling arguments:") {
		return "invalid_argument: arguments must be a JSON object"
	}
	return "invalid_argument: arguments: " + strings.TrimPrefix(msg, "validating root: ")
}

// rpcError is a canon error as a JSON-RPC error: a bad argument or a missing
// resource is invalid params, an internal error JSON-RPC's, the rest
// CodeServerError; the data names the Connect code.
func rpcError(ce *connect.Error) *jsonrpc.Error {
	code := int64(CodeServerError)
	switch ce.Code() {
	case connect.CodeInvalidArgument, connect.CodeNotFound:
		// The SDK's own resource-not-found is invalid params too.
		code = jsonrpc.CodeInvalidParams
	case connect.CodeInternal, connect.CodeUnknown:
		code = jsonrpc.CodeInternalError
	}
	data, _ := json.Marshal(map[string]string{"code": ce.Code().String()}) //nolint:errchkjson // a map of strings
	return &jsonrpc.Error{Code: code, Message: ce.Error(), Data: data}
}
