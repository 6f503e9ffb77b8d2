// Package mcp is coderun's Model Context Protocol server, built on the
// official Go SDK (github.com/modelcontextprotocol/go-sdk): the tools an
// MCP client (a desktop or IDE agent, any MCP-speaking framework) calls to
// run code once, to run code in named sessions whose state persists
// between calls, to move files in and out of a session's workspace, and to
// hand a task to coderun's agent and decide about the code it wants to run.
//
// One [Service] serves every tenant. Over stdio (`coderun mcp`) a client is
// the default tenant, with the records the CLI writes; over Streamable HTTP
// ([Service.Handler], mounted at /mcp by `coderun serve`) each request's
// tenant is the one the server's authentication put in its context
// ([server.TenantFrom]), and an MCP session belongs to the tenant that
// opened it.
//
// Results carry text for people and models and structured content for
// programs; plots come back as PNG image content, files as resource links
// or embedded resources. A failure of the code (an exception, a time
// limit, a policy denial) is a tool result with isError set and the
// traceback, never a protocol error. Long executions send progress
// notifications when the client asks for them, and a client's
// cancellation interrupts the running cell, as does an HTTP client's
// hanging up mid-call. resources/list gives the tenant's session files and
// recent runs, and clients are told when that list changes.
package mcp
