// Package sse writes Server-Sent Events: the streams by which coderun's
// API follows a run's steps and a job's verdicts.
package sse

import (
	"encoding/json"
	"fmt"
	"io"
)

// Write writes one event named event, with id (none if empty) and v as
// its JSON data, on one line.
func Write(w io.Writer, event, id string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("sse: %s event: %w", event, err)
	}
	if id != "" {
		if _, err := fmt.Fprintf(w, "id: %s\n", id); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data)
	return err
}

// KeepAlive writes a comment line, which clients ignore and proxies take
// as traffic.
func KeepAlive(w io.Writer) error {
	_, err := io.WriteString(w, ": keep-alive\n\n")
	return err
}
