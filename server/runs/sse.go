package runs

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// writeEvent writes one Server-Sent Event with v as its JSON data.
func writeEvent(w http.ResponseWriter, event, id string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if id != "" {
		if _, err := fmt.Fprintf(w, "id: %s\n", id); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data)
	return err
}
